"""Fixtures of the system tests."""

import pytest

from tests.support.claude_code import cli


@pytest.fixture(scope="module")
def claude_bin():
    """The real Claude Code CLI, installed once from the npm registry (cached)."""
    try:
        return cli.ensure_cli()
    except cli.RegistryUnreachable as e:
        pytest.skip(f"REAL CLAUDE CODE TEST NOT RUN: the npm registry is unreachable ({e})")
