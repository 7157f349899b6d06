"""Reading a TOML settings file (the access file, the sources file): its text and its tables, or
one line naming the file and what is wrong with it."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


def read_toml(path: Path, what: str, error: type[Exception]) -> tuple[str, dict[str, Any]]:
    """(text, data) of the file; `error` raised with "<what> <path>: ..." when it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except OSError as exc:
        raise error(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{what} {path}: not valid TOML ({exc})") from None
