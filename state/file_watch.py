"""A SQLite state database whose file is deleted while the process has it open: SQLite keeps
writing answers and votes to the deleted file, where they vanish when the process exits, and
every read still succeeds, so nothing said so (`/readyz` stayed ready).

`FileWatch.check()` notices (one stat), says so in one ERROR line, and restores the file at its
path from the open connection (SQLite's online backup), answers and votes included; new
connections then open the restored file. A file replaced by another one (a restored backup) is
reconnected to as it is. When the file cannot be restored (its folder is gone too), `check()`
returns the problem, which makes `/readyz` fail."""
from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from state.db import StateDB

log = logging.getLogger(__name__)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino


@dataclass
class FileWatch:
    db: StateDB
    path: Path
    identity: tuple[int, int] | None

    @classmethod
    def of(cls, db: StateDB) -> FileWatch | None:
        """The watch of a SQLite file database; None for Postgres or an in-memory database."""
        url = db.engine.url
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return None
        path = Path(url.database).resolve()
        return cls(db, path, _identity(path))

    async def check(self) -> str | None:
        """None while the file in use is the one at the path (or once it was restored there)."""
        now = _identity(self.path)
        if now == self.identity:
            return None
        if now is not None:
            log.warning("state database file %s was replaced while in use: reconnecting to the new file", self.path)
            await self.db.engine.dispose()
            self.identity = now
            return None
        log.error("state database file %s was deleted while in use: restoring it from the open connection", self.path)
        try:
            await self._restore()
        except (OSError, sqlite3.Error) as exc:
            return (f"state database file {self.path} was deleted while in use and cannot be restored ({exc}): "
                    "answers and votes are not kept")
        log.warning("state database file %s restored, with every answer and vote written to it meanwhile", self.path)
        return None

    async def _restore(self) -> None:
        restoring = self.path.with_name(self.path.name + ".restoring")
        async with self.db.engine.connect() as connection:
            raw = await connection.get_raw_connection()
            target = sqlite3.connect(restoring, check_same_thread=False)  # written in aiosqlite's thread
            try:
                await raw.driver_connection.backup(target)  # type: ignore[union-attr]
            finally:
                target.close()
        await self.db.engine.dispose()  # the connection to the deleted file goes
        os.replace(restoring, self.path)
        self.identity = _identity(self.path)
