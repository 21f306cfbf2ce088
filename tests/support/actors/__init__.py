"""Tiny actors for supervisor tests, built on actors/base.py."""
