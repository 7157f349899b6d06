"""Helpers shared by the tests (fixtures are in tests/conftest.py): paths and settings, waiting,
a fake clock, Slack conversations through the local harness, git repositories, a served bot."""
