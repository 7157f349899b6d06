"""Metrics, logs and traces: what an operator sees of docsbot (see the README's "Operating it")."""
