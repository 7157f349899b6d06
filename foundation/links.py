"""Citation links: the docs repository's web address and link pattern, from the settings.

DOCSBOT_REPO_WEB, else derived from DOCSBOT_REPO when it is a GitHub, GitLab or Bitbucket URL.
Used where the configuration is built (foundation/wiring.py) and by `doctor` (commands/readiness.py).
With DOCSBOT_SITE_URL, also the published site's pages (`site_of`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from foundation.settings import Settings

# A remote on a host whose web pages we know how to address: https://host/owner/repo(.git),
# ssh://git@host/owner/repo.git or git@host:owner/repo.git; credentials in the URL are dropped.
_REMOTE = re.compile(r"^(?:(?:https?|ssh|git)://(?:[^@/]+@)?|[^@/\s]+@)(?P<host>[^/:]+)(?::\d+)?[:/]"
                     r"(?P<path>[^?#\s]+?)(?:\.git)?/?$")
# host -> the DOCSBOT_LINK_TEMPLATE for its file pages at a commit
HOST_TEMPLATES = {"github.com": "github", "gitlab.com": "gitlab",
                  "bitbucket.org": "{repo_web}/src/{commit}/{path}#{anchor}"}


def web_from_remote(url: str) -> tuple[str, str] | None:
    """(repo web address, link template) of a GitHub, GitLab or Bitbucket remote, else None."""
    match = _REMOTE.match(url.strip())
    if match is None or match["host"].lower() not in HOST_TEMPLATES:
        return None
    host = match["host"].lower()
    return f"https://{host}/{match['path'].strip('/')}", HOST_TEMPLATES[host]


def links_of(settings: Settings) -> tuple[str, str]:
    """(repo web address, link pattern) for citations: DOCSBOT_REPO_WEB, else derived from
    DOCSBOT_REPO when it is a GitHub, GitLab or Bitbucket URL (a string, no git call), with that
    host's link template unless DOCSBOT_LINK_TEMPLATE is set."""
    from foundation.settings import LINK_PRESETS

    derived = None if settings.repo_web or settings.repo is None else web_from_remote(settings.repo.get_secret_value())
    if derived is None:
        return settings.repo_web, settings.link_pattern
    template = settings.link_template if "link_template" in settings.model_fields_set else derived[1]
    return derived[0], LINK_PRESETS.get(template, template)


def site_of(settings: Settings) -> tuple[str, str, str]:
    """(site URL, layout, docs root) for links to the published site: DOCSBOT_SITE_URL and
    DOCSBOT_SITE_LAYOUT, and the folder the indexer reads the docs from, where `auto` looks for
    the generator's configuration and routing front matter is read (`docsbot index --docs DIR`
    with another DIR than DOCSBOT_DOCS_DIR: name the layout). No site URL: no root."""
    site = settings.site_url_template or settings.site_url  # a template states the rule itself
    if not site:
        return "", settings.site_layout, ""
    return site, settings.site_layout, docs_root(settings)


def docs_root(settings: Settings) -> str:
    """DOCSBOT_DOCS_DIR without a repository; a repository's docs folder as the sync checks it out
    (sync/workcopy.py: `<work dir>/repo`, the work dir defaulting to `<data dir>/sync`), or the
    folder itself when DOCSBOT_REPO is a local folder outside git; "" when that cannot be known."""
    if settings.repo is None:
        return settings.docs_dir
    repo, subdir = settings.repo.get_secret_value().strip(), settings.repo_subdir.strip("/")
    if "://" not in repo and Path(repo).expanduser().is_dir() and not (Path(repo).expanduser() / ".git").exists():
        return str(Path(repo).expanduser())
    if settings.work_dir:
        copy = Path(settings.work_dir) / "repo"
    elif "://" not in settings.data_dir:
        copy = Path(settings.data_dir) / "sync" / "repo"
    else:
        return ""
    return str(copy / subdir if subdir else copy)
