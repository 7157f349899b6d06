"""`docsbot doctor` with a sources file (DOCSBOT_SOURCES): the file itself, then each source.

A file that cannot be used (a bad key, a literal credential: foundation/sources_file.py) is one
failed finding naming its line and the fix. Each source then gets one finding: whether its
repository answers a fetch now (`git ls-remote`, TIMEOUT_S, the token from its `token_env` handed
to git as a sync does), the commit it is indexed at and its age, its documents and those a member
reads, and the error of its last sync when that failed (it serves its last good commit). A source
without a web address for citation links, or a URL source without a push secret, adds a warning.
The one-repository checks of links, freshness, unindexed files and the site are the sources'
here (a source's own unindexed files and site links are checked in its working copy).
"""
from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commands.doctor_finding import Finding
from commands.readiness import member_level

if TYPE_CHECKING:
    from foundation.settings import Settings
    from foundation.sources_file import Source

TIMEOUT_S = 10.0


def sources_checks(settings: Settings) -> list[Finding]:
    from commands.doctor_files import unindexed_checks
    from commands.doctor_site import site_checks
    from foundation.sources_file import SourcesFileError, load_sources
    from foundation.wiring import source_settings

    if not settings.sources:
        return []
    try:
        sources = load_sources(settings.sources, settings)
    except SourcesFileError as exc:
        return [Finding("sources file", "failed", str(exc),
                        "fix the file (its keys are described in docs/sync.md), then run `docsbot doctor` again")]
    found = [Finding("sources file", "ok", f"{settings.sources}: {len(sources)} sources "
                     f"({', '.join(s.name for s in sources)}), no credential written in it")]
    indexed, ranks = _indexed(settings)
    level = member_level(settings)
    for source in sources:
        own = source_settings(settings, source)
        found.append(_source(source, indexed.get(source.name), ranks.get(source.name, []), level))
        found += _links_and_webhook(source)
        found += [Finding(f"source {source.name}: {f.check}", f.status, f.detail, f.fix)
                  for f in (*unindexed_checks(own), *site_checks(own))]
    return found


def _indexed(settings: Settings) -> tuple[dict[str, dict[str, Any]], dict[str, list[int]]]:
    """Each source's metadata in the index and its documents' access ranks (empty without an
    index: the index check says why)."""
    from foundation.wiring import index_config
    from rag import open_index
    from sync.source_index import source_of, sources_meta

    try:
        store = open_index(index_config(settings))
        if not store.exists():
            return {}, {}
        ranks: dict[str, list[int]] = {}
        for path, (rank,) in store.doc_columns("access_rank").items():
            ranks.setdefault(source_of(path)[0], []).append(rank)
        return sources_meta(store.meta()), ranks
    except Exception:  # an unreadable index is the index check's finding
        return {}, {}


def _source(source: Source, meta: dict[str, Any] | None, ranks: list[int], level: Any) -> Finding:
    check = f"source {source.name}"
    fetched = _fetch(source.settings)
    if fetched.startswith("error: "):
        serving = f"; the index serves its commit {meta['commit'][:12]}" if meta and meta.get("commit") else ""
        return Finding(check, "failed", f"cannot fetch {_shown(source)}: {fetched.removeprefix('error: ')}{serving}",
                       "check its `repo` and `branch`, and for a private repository the variable its `token_env` "
                       "names (and its access to the repository)")
    if not meta or not meta.get("commit"):
        return Finding(check, "warning", f"fetches {_shown(source)} at {fetched[:12]}, but it is not indexed yet",
                       "run `docsbot sync` (or wait for the worker's next sync)")
    readable = sum(rank <= level for rank in ranks)
    detail = (f"fetches {_shown(source)}; indexed commit {meta['commit'][:12]}{_age(meta.get('commit_date'))}"
              f"{'' if fetched == meta['commit'] else f' (the remote is at {fetched[:12]}: the next sync takes it)'}"
              f"; {len(ranks)} documents, {readable} readable at `{level.name}`")
    if meta.get("error"):
        return Finding(check, "warning", f"{detail}; its last sync failed at {meta.get('failed_at')}, so it serves "
                       f"its last good commit: {meta['error']}", "run `docsbot sync` and fix what it reports")
    if ranks and not readable:
        return Finding(check, "warning", f"{detail}: nobody in Slack gets an answer from it",
                       "set `default_level` (or `path_levels`) in its [[source]] table, or give its documents "
                       "`access:` front matter")
    return Finding(check, "ok", detail)


def _links_and_webhook(source: Source) -> list[Finding]:
    from foundation.links import links_of
    from sync.workcopy import is_local_uri

    found = []
    if not links_of(source.settings)[0]:
        found.append(Finding(f"source {source.name}: citation links", "warning",
                             "no repository web address: its citations have no links",
                             "set `repo_web` (and `link_template` for a host other than GitHub) in its [[source]] "
                             "table, then `docsbot sync` (nothing is re-embedded)"))
    repo = source.settings.repo.get_secret_value() if source.settings.repo else ""
    if repo and not is_local_uri(repo) and source.settings.webhook_secret is None:
        found.append(Finding(f"source {source.name}: git webhook", "warning",
                             "no push secret: its pushes are refused and only scheduled syncs run",
                             "set `webhook_secret_env` in its [[source]] table (or DOCSBOT_WEBHOOK_SECRET) and the "
                             "same secret on the repository's push webhook"))
    return found


def _fetch(settings: Settings) -> str:
    """The commit the source's branch is at in its repository, or `error: why`."""
    from sync.gitcmd import GitError, git, without_credentials
    from sync.workcopy import is_local_uri

    assert settings.repo is not None
    repo = settings.repo.get_secret_value().strip()
    url, credentials = without_credentials(str(Path(repo).expanduser().resolve()) if is_local_uri(repo) else repo)
    ref = f"refs/heads/{settings.branch}" if settings.branch else "HEAD"
    try:
        out = git(Path(tempfile.gettempdir()), "ls-remote", "--exit-code", url, ref, timeout=TIMEOUT_S,
                  env=credentials)
    except GitError as exc:
        return f"error: {exc}"
    return out.split()[0] if out.split() else f"error: no {settings.branch or 'HEAD'} in the repository"


def _shown(source: Source) -> str:
    from sync.gitcmd import redact

    return redact(source.settings.repo.get_secret_value()) if source.settings.repo else "(no repo)"


def _age(date: str | None) -> str:
    if not date:
        return ""
    days = (datetime.now(timezone.utc) - datetime.fromisoformat(date)).total_seconds() / 86400
    return f", committed {days:.1f} days ago"
