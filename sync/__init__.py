"""Keeping the index in step with the docs repository: git source, diff, incremental reindex."""
