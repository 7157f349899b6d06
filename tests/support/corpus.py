"""A small docs folder of the test's own pages, indexed for real (LanceDB, the embedded model)."""
from __future__ import annotations

from pathlib import Path

from foundation.wiring import lease_config, open_engine
from rag import ExtractiveAnswerer, LocalMiniLM
from sync.folder import index_folder
from tests.support.settings import make_settings


def indexed_pages(root: Path, embedder: LocalMiniLM, pages: dict[str, str]) -> str:
    """`pages` (path under the docs folder: text) written under `root/docs` and indexed into
    `root/index` with the session's `embedder`; returns that data dir."""
    docs = root / "docs"
    for path, text in pages.items():
        (docs / path).parent.mkdir(parents=True, exist_ok=True)
        (docs / path).write_text(text, encoding="utf-8")
    settings = make_settings(root / "index")
    engine = open_engine(settings, generator=ExtractiveAnswerer())
    engine.embedder = embedder
    index_folder(engine, lease_config(settings), docs)
    return settings.data_dir
