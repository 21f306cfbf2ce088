"""Operator commands: ctl, doctor, install, demo, rescan, reembed, Claude Code settings."""
