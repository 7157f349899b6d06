"""What the answers teach the docs owners: the docs-gaps report and the 👎 golden-set candidates (no Slack here)."""
