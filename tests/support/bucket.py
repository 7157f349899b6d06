"""An index in a bucket of the local S3 server, synced from a new git repository of a few docs."""
from __future__ import annotations

from pathlib import Path

from foundation.settings import Settings
from foundation.wiring import sync_config
from eval.repos import commit_files
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.levels import Level
from sync.service import run_sync
from tests.standins.s3 import LocalS3
from tests.support.sync import new_repo, sync_settings

VACATION = "# Vacation Policy\n\nEvery employee gets {days} vacation days per calendar year.\n"
DOCS = {
    "handbook/vacation.md": VACATION.format(days=25),
    "handbook/expenses.md": "# Expenses\n\nMeals are covered up to 60 EUR per day.\n",
    "ops/oncall.md": "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n",
    "ops/backups.md": "# Backups\n\nBackups are kept for 30 days.\n",
}


def bucket_settings(tmp_path: Path, s3: LocalS3, source: Path) -> Settings:
    local = sync_settings(tmp_path, source, work_dir=str(tmp_path / "work"), index_refresh_s=1.0,
                          default_level="public")
    return local.model_copy(update={"data_dir": s3.uri("team/index")})


def synced_bucket(tmp_path: Path, s3: LocalS3, embedder: LocalMiniLM) -> tuple[Path, str, Settings]:
    """The sample docs committed to a new repo and synced once into the bucket: (repo, commit, settings)."""
    source = new_repo(tmp_path / "upstream")
    first = commit_files(source, DOCS)
    settings = bucket_settings(tmp_path, s3, source)
    run_sync(sync_config(settings), embedder)
    return source, first, settings


async def cited_commit(engine: Engine, question: str, doc_path: str) -> tuple[str, str]:
    answer = await engine.ask(question, Level.public)
    assert answer.answered, answer.detail
    citation = next(c for c in answer.citations if c.doc_path == doc_path)
    return citation.commit, answer.answer
