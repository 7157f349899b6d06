"""Helpers shared by the tests (fixtures are in tests/conftest.py): paths and settings, waiting,
a fake clock, Slack conversations through the local harness, git repositories, a served bot.
What the benchmarks also use is shipped in eval/: the OpenAI stand-in (eval/standins/), the scratch
Postgres database (eval/scratch_db.py), git repositories and index comparison (eval/repos.py)."""
