"""Index errors, and the rewrapping that turns a Lance or I/O failure into one that says what to do."""
from __future__ import annotations

import errno
import functools
import inspect
import re
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar


class StoreError(RuntimeError):
    """Base for index problems that a person must act on (message says what to do)."""


class IndexMissing(StoreError):
    pass


class IndexMismatch(StoreError):
    pass


class IndexUnreadable(StoreError):
    """Lance or the file system failed on the index (a data file deleted, a disk error...)."""


class WriteRefused(StoreError):
    """This process may no longer write the index (it lost the index-writer lease)."""


def same_embedding(meta: dict[str, Any], model: str, dim: int) -> dict[str, Any]:
    """The index's metadata; IndexMismatch when it was built with another embedding model."""
    built = meta.get("embedding")
    if built and (built["model"], built["dim"]) != (model, dim):
        raise IndexMismatch(
            f"the index was built with {built['model']} (dimension {built['dim']}) but "
            f"{model} (dimension {dim}) is configured: run `docsbot index` to rebuild it"
        )
    return meta


_RUST_LOCATION = re.compile(r",?\s*/\S+\.rs:\d+:\d+")
_DISK_FULL = "No space left on device"  # strerror(ENOSPC), as Lance's Rust I/O errors quote it
C = TypeVar("C", bound=type)


ROWS_FAILED = "docsbot_rows_failed"  # set on an error a streamed write's rows raised (writes.streamed_write)


@contextmanager
def unreadable(uri: str) -> Iterator[None]:
    """Lance and I/O errors inside become IndexUnreadable, naming the index and the fix."""
    try:
        yield
    except StoreError:
        raise
    except (OSError, RuntimeError) as exc:  # lance reports a missing data file as a RuntimeError
        if getattr(exc, ROWS_FAILED, False):  # raised while a write's rows were made (the embedder's): not Lance's
            raise
        text = str(exc).strip()
        reason = _RUST_LOCATION.sub("", text.splitlines()[0]) if text else type(exc).__name__
        if getattr(exc, "errno", None) == errno.ENOSPC or _DISK_FULL in text:  # nothing to rebuild: no room
            raise IndexUnreadable(f"the disk is full: free disk space, then sync again (the index at {uri} "
                                  f"cannot be written: {reason})") from exc
        raise IndexUnreadable(f"the index at {uri} cannot be read ({reason}): "
                              "run `docsbot index --rebuild` to rebuild it from the docs") from exc


def store_errors(cls: C) -> C:
    """Every public method the class defines (not those it inherits: decorate each class) turns a
    Lance or I/O error into IndexUnreadable: one line that names the index (`self.uri`) and the
    fix, instead of a traceback in whichever command touched it."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):
            @functools.wraps(method)
            async def guarded_async(self: Any, *args: Any, **kwargs: Any) -> Any:
                with unreadable(self.uri):
                    return await method(self, *args, **kwargs)
            return guarded_async

        @functools.wraps(method)
        def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
            with unreadable(self.uri):
                return method(self, *args, **kwargs)
        return guarded

    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, wrap(member))
    return cls
