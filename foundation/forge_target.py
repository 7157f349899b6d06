"""Where a docs change proposal goes (proposals/propose.py `Target`), from a source's settings.

The forge is the one DOCSBOT_FORGE names, else the repository's host tells it (github.com,
gitlab.com, an https URL or git@host:path); its project is DOCSBOT_FORGE_PROJECT, else the
repository URL's path without `.git`; its token DOCSBOT_FORGE_TOKEN, else the one in the URL (a
source's `token_env`). Without a token in the URL, git pushes with the API's token (GitHub's
`x-access-token`, GitLab's `oauth2` user), handed to git through its environment. A local-path
repository has no forge: it gets a branch and a patch.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from foundation.errors import UserError
from foundation.settings import Settings
from proposals.forge import DEFAULT_API, ForgeConfig, Kind
from proposals.propose import Target

_SCP = re.compile(r"^[\w.-]+@(?P<host>[^:/]+):(?P<path>.+)$")
_HOSTS: dict[str, Kind] = {"github.com": "github", "gitlab.com": "gitlab"}


def proposal_target(settings: Settings, folder: Path) -> Target:
    """The repository of `settings` (one source's), with `folder` for patches."""
    if settings.repo is None:
        raise UserError("docs change proposals need a docs repository: set DOCSBOT_REPO or a sources file")
    repo = settings.repo.get_secret_value().strip()
    host, path, password = _parts(repo)
    local = host is None
    if local:
        repo = str(Path(repo).expanduser().resolve())
    kind: Kind | None = settings.forge or (_HOSTS.get(host or "") if not local else None)
    forge = None
    if kind is not None and not local:
        token = settings.forge_token.get_secret_value() if settings.forge_token else password
        if not token:
            raise UserError("docs change proposals need a token for the forge's API: set DOCSBOT_FORGE_TOKEN "
                            "(or a token in the repository URL)")
        api = settings.forge_api_url.rstrip("/") or (DEFAULT_API[kind] if host in _HOSTS else "")
        if not api:
            raise UserError(f"{host} is not github.com or gitlab.com: set DOCSBOT_FORGE_API_URL to its API")
        forge = ForgeConfig(kind, api, settings.forge_project.strip("/") or path.removesuffix(".git"), token)
        if not password and repo.startswith(("https://", "http://")):  # git pushes with the API's token
            user = "x-access-token" if kind == "github" else "oauth2"
            repo = repo.replace("://", f"://{user}:{quote(token, safe='')}@", 1)
    return Target(repo, settings.branch, settings.repo_subdir, folder, settings.proposal_author, forge, local)


def _parts(repo: str) -> tuple[str | None, str, str]:
    """(host, path on the forge, password) of a repository URL; host None for a local path."""
    scp = _SCP.match(repo)
    if scp:
        return scp["host"], scp["path"].strip("/"), ""
    parts = urlsplit(repo)
    if not parts.scheme or len(parts.scheme) == 1:  # a path (C:\ on Windows has a one-letter "scheme")
        return None, "", ""
    return parts.hostname or "", parts.path.strip("/"), unquote(parts.password or "")


def target_of(settings: Settings, cited: str, folder: Path) -> tuple[Target, str]:
    """The target of the repository a cited path is in, and the path inside it: with a sources
    file the path names its source (`handbook:ops/deploy.md`), as citations do."""
    if not settings.sources:
        return proposal_target(settings, folder), cited
    from foundation.sources_file import load_sources
    from rag.paths import source_of

    name, inner = source_of(cited)
    sources = {source.name: source for source in load_sources(settings.sources, settings)}
    if name not in sources:
        raise UserError(f"{cited}: name the source, as citations do (`{next(iter(sources))}:{inner or 'page.md'}`)")
    return proposal_target(sources[name].settings, folder), inner


def proposals_folder(settings: Settings) -> Path:
    """Where proposals' scratch clones and patches are kept: the work dir, else a local data dir,
    else the temporary folder (an index in a bucket)."""
    if settings.work_dir:
        return Path(settings.work_dir) / "proposals"
    data = settings.data_dir
    return (Path(data) if "://" not in data else Path(tempfile.gettempdir()) / "docsbot") / "proposals"
