"""open_index: the one way to open an index. The location's scheme picks the adapter; anything
else (a folder, s3://, gs://, any URI LanceDB reads) is LanceDB. Adapters are imported when
chosen, so a process on Postgres never loads LanceDB's tables, and one on LanceDB never psycopg.

Another store is one adapter module and one line here."""
from __future__ import annotations

import importlib
from typing import Callable, cast

from rag.config import IndexConfig
from rag.store.protocol import Index

# URL scheme (before "://", any "+driver" dropped) -> "module:function(config, read_only) -> Index"
ADAPTERS = {
    "postgresql": "rag.store.postgres:open_postgres",
    "postgres": "rag.store.postgres:open_postgres",
}
DEFAULT = "rag.store.mirror:open_lance"


def adapter_of(location: str) -> str:
    scheme = location.split("://", 1)[0].split("+", 1)[0].lower() if "://" in location else ""
    return ADAPTERS.get(scheme, DEFAULT)


def open_index(config: IndexConfig, read_only: bool = False) -> Index:
    """The index at config.location, as this process should read it (`read_only`: a replica that
    never writes, which an adapter may serve from a local copy)."""
    module, name = adapter_of(config.location).split(":")
    opener = cast(Callable[[IndexConfig, bool], Index], getattr(importlib.import_module(module), name))
    return opener(config, read_only)
