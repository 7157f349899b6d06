"""Docs changes proposed from Slack (issue 53): a person's answer placed in the page's section,
on a `docsbot/*` branch of the page's repository, and opened as a pull or merge request."""
