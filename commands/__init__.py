"""The `docsbot` command: the composition root, where settings become running services (nothing imports it)."""
