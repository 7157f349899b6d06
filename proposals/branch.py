"""A proposal as one commit on a `docsbot/*` branch of the docs repository, pushed with real git.

The branch starts at the head of the docs branch as the repository has it now (a shallow fetch
into a scratch folder of its own: the sync's work copy is never touched), so the page is changed
as its owners see it. The commit is authored by the bot, with a `Co-authored-by:` trailer for the
proposer when their e-mail is known. Only `refs/heads/docsbot/<name>` is ever pushed: `push_ref`
refuses any other name before git runs. A local-path repository gets the branch too, and a patch
file (`git format-patch`) for its owner. Credentials in the URL reach git through its environment
(sync/gitcmd.py), never a command line; every error message is redacted.
"""
from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sync.gitcmd import GitError, git, without_credentials

PREFIX = "docsbot/"
_SLUG = re.compile(r"[^a-z0-9]+")
_BRANCH = re.compile(r"docsbot/[a-z0-9][a-z0-9-]{0,79}")


class ProposalError(RuntimeError):
    """The proposal could not be made; the message is one line, safe to show and log."""


@dataclass(frozen=True)
class Edit:
    """What changes: a page (repository-relative path) and how its text becomes the new text."""

    path: str
    subject: str  # the commit's first line
    body: str = ""
    co_author: str = ""  # "Name <email>", or "" when the proposer's e-mail is unknown


@dataclass(frozen=True)
class Pushed:
    branch: str
    commit: str


def slug(text: str, salt: str) -> str:
    """`docsbot/<words of text>-<6 hex of salt>`: readable, and unique per proposal."""
    words = _SLUG.sub("-", text.casefold()).strip("-")[:48].strip("-") or "docs-change"
    return f"{PREFIX}{words}-{hashlib.sha1(salt.encode()).hexdigest()[:6]}"


def push_ref(branch: str) -> str:
    """The only kind of ref a proposal pushes; anything else is refused here, before git runs."""
    if not _BRANCH.fullmatch(branch):
        raise ProposalError(f"refusing to push {branch!r}: docsbot pushes only to {PREFIX}* branches")
    return f"refs/heads/{branch}"


def read_page(repo: str, branch: str, path: str, scratch: Path, timeout: float = 120) -> str | None:
    """The page's text at the head of `branch`, fetched into `scratch`; None when there is no such file."""
    clone = _fetch(repo, branch, scratch, timeout)
    page = clone / PurePosixPath(path)
    if page.is_symlink() or (page.exists() and not page.is_file()):
        raise ProposalError(f"{path} is not a regular file in the repository")
    return page.read_text(encoding="utf-8") if page.exists() else None


def commit_and_push(repo: str, edit: Edit, text: str, proposal_branch: str, scratch: Path, author: str,
                    timeout: float = 120, push: bool = True) -> Pushed:
    """One commit writing `text` to `edit.path` on `proposal_branch`, on the head `read_page`
    fetched into `scratch`, pushed to `repo` (unless `push` is false: the commit stays in
    `scratch`, for a patch)."""
    ref = push_ref(proposal_branch)
    clone = scratch / "clone"
    target = clone / PurePosixPath(edit.path)
    if not target.resolve().is_relative_to(clone.resolve()):
        raise ProposalError(f"{edit.path} is outside the repository")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    name, _, email = author.partition(" <")
    message = "\n\n".join(part for part in (edit.subject, edit.body,
                                             f"Co-authored-by: {edit.co_author}" if edit.co_author else "") if part)
    git(clone, "checkout", "--quiet", "-b", proposal_branch)
    git(clone, "add", "--", edit.path)
    _commit(clone, name, email.rstrip(">"), message, timeout)
    commit = git(clone, "rev-parse", "HEAD").strip()
    if push:
        url, credentials = without_credentials(repo)
        try:
            git(clone, "push", "--quiet", "--no-verify", url, f"HEAD:{ref}", timeout=timeout, env=credentials)
        except GitError as exc:
            raise ProposalError(f"could not push {proposal_branch}: {exc}") from None
    return Pushed(proposal_branch, commit)


def patch_file(scratch: Path, out: Path) -> Path:
    """The last commit in `scratch` as a patch an owner applies with `git am`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(git(scratch / "clone", "format-patch", "-1", "--stdout", "HEAD"), encoding="utf-8")
    return out


def _commit(clone: Path, name: str, email: str, message: str, timeout: float) -> None:
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".msg", delete=False, dir=clone.parent) as msg:
        msg.write(message + "\n")
    try:
        git(clone, "-c", f"user.name={name}", "-c", f"user.email={email}", "commit", "--quiet", "--no-verify",
            "-F", msg.name, timeout=timeout)
    finally:
        Path(msg.name).unlink(missing_ok=True)


def _fetch(repo: str, branch: str, scratch: Path, timeout: float) -> Path:
    clone = scratch / "clone"
    clone.mkdir(parents=True, exist_ok=True)
    git(clone, "init", "--quiet")
    url, credentials = without_credentials(repo)
    source = f"refs/heads/{branch}" if branch else "HEAD"
    try:
        git(clone, "fetch", "--quiet", "--no-tags", "--depth", "1", url, source, timeout=timeout, env=credentials)
    except GitError as exc:
        raise ProposalError(f"could not read the docs repository: {exc}") from None
    git(clone, "checkout", "--quiet", "--detach", "FETCH_HEAD")
    return clone
