"""The sources file (DOCSBOT_SOURCES): every docs repository of a team, one `[[source]]` table each.

A table has a `name` and the keys of the per-repository settings without their `DOCSBOT_` prefix
(`repo`, `branch`, `repo_subdir`, `include`, ...), with the same meaning; a key not written keeps
the setting's value, so DOCSBOT_DEFAULT_LEVEL is every source's default. Each value is checked by
the setting's own validator, so a bad one reads as it would in the environment, plus the file's
line. Credentials are never written in the file: `token_env` names the variable holding the
token put into an https `repo` URL, `webhook_secret_env` the one holding the source's push secret;
a URL with a password or a literal secret key is refused. `was = "old-name"` carries a source
over a rename (its state and commit), rather than removing the old one and adding the new.

`SourcesFile` re-reads the file when it changes and keeps the last good sources when the new
text cannot be used (as the access file does), remembering why for `status` and `doctor`.
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr, ValidationError

from foundation.errors import UserError
from foundation.settings import Settings
from foundation.toml_file import read_toml

log = logging.getLogger("docsbot.sources")

# The per-repository settings a source may set, with the schedule (each source has its own).
SOURCE_KEYS = frozenset({
    "repo", "branch", "repo_subdir", "include", "exclude", "default_level", "path_levels", "repo_web",
    "link_template", "site_url", "site_url_template", "site_layout", "docs_language", "index_drafts",
    "max_file_bytes", "sync_interval_minutes", "sync_cron", "forge", "forge_api_url", "forge_project",
})
OWN_KEYS = frozenset({"name", "was", "token_env", "webhook_secret_env"})
SECRET_KEYS = frozenset({"token", "password", "webhook_secret", "secret", "api_key"})
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SourcesFileError(UserError, ValueError):
    """The sources file cannot be used; the message names the line and the fix (every command
    prints it as one line)."""


@dataclass(frozen=True)
class Source:
    """One source: its name, the settings its sync reads (the base settings with its keys, its
    webhook secret DOCSBOT_WEBHOOK_SECRET unless it names its own) and the name it had before."""

    name: str
    settings: Settings
    was: str = ""


def load_sources(path: str | Path, base: Settings, environ: dict[str, str] | None = None) -> tuple[Source, ...]:
    """Read and check the sources file; SourcesFileError says what is wrong and where."""
    path = Path(path)
    text, data = read_toml(path, "sources file", SourcesFileError)
    return parse_sources(data, text, base, str(path), os.environ if environ is None else environ)


def parse_sources(data: dict[str, Any], text: str, base: Settings, where: str,
                  environ: dict[str, str] | Any) -> tuple[Source, ...]:
    if set(data) - {"source"}:
        raise SourcesFileError(f"sources file {where}: unknown section {sorted(set(data) - {'source'})[0]!r}: "
                               "write each repository as a [[source]] table")
    tables = data.get("source")
    if not isinstance(tables, list) or not tables:
        raise SourcesFileError(f"sources file {where}: no [[source]] table; add one with a name and a repo")
    lines = [n for n, line in enumerate(text.splitlines(), 1) if line.strip().replace(" ", "") == "[[source]]"]
    sources: list[Source] = []
    for i, table in enumerate(tables):
        at = f"sources file {where}, line {lines[i] if i < len(lines) else '?'}"
        source = _source(table, base, at, environ)
        taken = {s.name for s in sources} | {s.was for s in sources if s.was}
        if source.name in taken or (source.was and source.was in taken):
            raise SourcesFileError(f"{at}: source {source.name!r} is named twice: give each source its own name")
        sources.append(source)
    return tuple(sources)


def _source(table: dict[str, Any], base: Settings, at: str, environ: Any) -> Source:
    name = table.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SourcesFileError(f"{at}: `name` must be lower-case letters, digits, - or _ (like \"handbook\"), "
                               f"got {name!r}")
    at = f"{at} (source {name!r})"
    if secret := sorted(set(table) & SECRET_KEYS):
        raise SourcesFileError(f"{at}: a credential is written in the file ({secret[0]}): put it in an "
                               f"environment variable and name that variable in `{_env_key(secret[0])}`")
    if unknown := sorted(set(table) - SOURCE_KEYS - OWN_KEYS):
        raise SourcesFileError(f"{at}: unknown key {unknown[0]!r} (a source takes name, was, token_env, "
                               f"webhook_secret_env and {', '.join(sorted(SOURCE_KEYS))})")
    if not isinstance(table.get("repo"), str) or not table["repo"].strip():
        raise SourcesFileError(f"{at}: `repo` (a git URL or a local path) is missing")
    if literal_credential(table["repo"]):
        raise SourcesFileError(f"{at}: `repo` holds a credential: write the URL without it and name the "
                               "variable that holds the token in `token_env`")
    settings = base.model_copy(update={"sources": ""})  # a source is one repository
    for key in sorted(set(table) & SOURCE_KEYS):
        value = table[key]
        try:
            Settings.__pydantic_validator__.validate_assignment(settings, key, value)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise SourcesFileError(f"{at}: `{key}` {error['msg'].removeprefix('Value error, ')}") from None
    repo = table["repo"].strip()
    if token_env := table.get("token_env"):
        repo = with_token(repo, _variable(environ, token_env, "token_env", at), at)
    Settings.__pydantic_validator__.validate_assignment(settings, "repo", repo)
    if hook_env := table.get("webhook_secret_env"):
        Settings.__pydantic_validator__.validate_assignment(
            settings, "webhook_secret", SecretStr(_variable(environ, hook_env, "webhook_secret_env", at)))
    was = table.get("was", "")
    if not isinstance(was, str) or (was and (not NAME.fullmatch(was) or was == name)):
        raise SourcesFileError(f"{at}: `was` must be the source's previous name, got {was!r}")
    return Source(name, settings, was)


def _env_key(key: str) -> str:
    return "webhook_secret_env" if "secret" in key else "token_env"


def _variable(environ: Any, name: object, key: str, at: str) -> str:
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise SourcesFileError(f"{at}: `{key}` must name an environment variable (like HANDBOOK_TOKEN), "
                               "not hold the value")
    value = environ.get(name, "")
    if not value:
        raise SourcesFileError(f"{at}: `{key}` names {name}, which is not set")
    return str(value)


def literal_credential(url: str) -> bool:
    """Whether a repository URL carries a password or token (`https://user:token@host/...`); the
    user of an ssh URL (`git@host:org/repo`) is no credential."""
    parts = urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.password or (parts.username and parts.username != "git"))


def with_token(url: str, token: str, at: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise SourcesFileError(f"{at}: `token_env` needs an https `repo` URL (an ssh URL uses the host's key)")
    return urlunsplit(parts._replace(netloc=f"x-access-token:{token}@{parts.netloc}"))


class SourcesFile:
    """The sources in force: re-read when the file changes; a change that cannot be used keeps
    the last good sources (`error` says why) and a file that is gone keeps them too, since
    dropping every source would remove every document at the next sync."""

    def __init__(self, path: str | Path, base: Settings) -> None:
        self.path = Path(path)
        self.base = base
        self.sources = load_sources(self.path, base)  # the first read must succeed
        self.error = ""
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def current(self) -> tuple[Source, ...]:
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self.sources, self.error = load_sources(self.path, self.base), ""
                log.warning("sources file %s reloaded", self.path)
            except SourcesFileError as exc:
                self.error = str(exc)
                log.warning("%s: the previous sources stay in force", exc)
        return self.sources
