"""One docs change proposal, from the text a person wrote to a pull request on its page.

The page is read at the head of the docs branch, the text placed in its section
(proposals/placement.py), committed on a `docsbot/*` branch and pushed (proposals/branch.py),
then a pull request (GitHub) or merge request (GitLab) is opened with the page's owners as
reviewers (proposals/forge.py). Where that cannot all happen, what can is done and said:
- the text cannot be placed safely: nothing is pushed; the owner gets a patch that adds the text
  at the end of the page, to move where it belongs (`placed` false);
- a local-path repository, or a remote with no forge configured: the branch is pushed and a
  patch file written beside it, no request opened.
The body names the question only when it is given (the caller leaves it out without the asker's
consent: it says "a question asked in Slack" then).
"""
from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from proposals.branch import Edit, ProposalError, commit_and_push, patch_file, read_page, slug
from proposals.forge import Forge, ForgeConfig
from proposals.placement import SEPARATOR, new_page, place
from rag import AccessRules, DocumentError, Ownership, parse_document

_MAX_PAGE_BYTES = 5_000_000


@dataclass(frozen=True)
class Proposal:
    path: str  # the page, relative to the docs folder (as cited, without a source's prefix)
    section: str  # its heading path as cited ("A › B"); "" for the text before the first section
    text: str  # what to add, as the person wrote it
    proposer: str  # a display name
    proposer_email: str = ""  # for the commit's Co-authored-by trailer; "" when unknown
    question: str = ""  # the question it answers; "" when it may not be quoted
    thread_url: str = ""
    new_title: str = ""  # a new page at `path` with this title, when there is no page there


@dataclass(frozen=True)
class Target:
    """The repository the page is in, and what to open the request with."""

    repo: str  # a URL (credentials are handed to git through its environment) or a local path
    branch: str  # "" = the remote's default branch
    subdir: str  # where the docs folder is inside the repository
    folder: Path  # where patches are kept (in the data dir)
    author: str = "docsbot <docsbot@users.noreply.invalid>"
    forge: ForgeConfig | None = None
    local: bool = False  # a local path: a branch and a patch, never a request


@dataclass(frozen=True)
class Outcome:
    branch: str
    commit: str
    placed: bool  # false: the text could not be placed safely; `patch` adds it at the page's end
    pushed: bool
    url: str = ""  # the pull or merge request; "" when none was opened
    number: int = 0
    patch: Path | None = None
    reviewers: tuple[str, ...] = ()
    note: str = ""  # what did not go as asked, "" else


async def propose(proposal: Proposal, target: Target) -> Outcome:
    if not proposal.text.strip():
        raise ProposalError("there is no text to add")
    repo_path = str(PurePosixPath(target.subdir.strip("/") or ".") / proposal.path).removeprefix("./")
    name = slug(proposal.question or f"{proposal.path} {proposal.section}",
                f"{proposal.path}\0{proposal.section}\0{proposal.text}\0{proposal.thread_url}")
    target.folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="proposal-", dir=target.folder) as tmp:
        scratch = Path(tmp)
        page = await asyncio.to_thread(read_page, target.repo, target.branch, repo_path, scratch)
        text, placed = _new_text(proposal, page)
        reviewers = _owners(scratch / "clone", target.subdir, proposal.path, page)
        edit = Edit(repo_path, _title(proposal), _commit_body(proposal), _co_author(proposal))
        pushed = await asyncio.to_thread(commit_and_push, target.repo, edit, text, name, scratch,
                                         target.author, push=placed)
        patch = None
        if not placed or target.local or target.forge is None:
            patch = patch_file(scratch, target.folder / f"{name.removeprefix('docsbot/')}.patch")
    if not placed:
        return Outcome(name, pushed.commit, False, False, patch=patch, reviewers=tuple(reviewers),
                       note=f"the text could not be placed in {_where(proposal)}: the patch adds it at the end "
                            "of the page, to move where it belongs")
    if target.local or target.forge is None:
        return Outcome(name, pushed.commit, True, True, patch=patch, reviewers=tuple(reviewers),
                       note="" if target.local else "no forge is configured: the branch is pushed, no request opened")
    forge = Forge(target.forge)
    base = target.branch or await forge.default_branch()
    opened = await forge.open(name, base, _title(proposal), _request_body(proposal), reviewers)
    return Outcome(name, pushed.commit, True, True, opened.url, opened.number, None, tuple(reviewers), opened.note)


def _new_text(proposal: Proposal, page: str | None) -> tuple[str, bool]:
    if page is None:
        if not proposal.new_title:
            raise ProposalError(f"there is no page {proposal.path} in the repository (give a title for a new page)")
        made = new_page(proposal.path, proposal.new_title, proposal.text)
        if made is None:
            raise ProposalError(f"docsbot cannot write a new page in the format of {proposal.path}")
        return made, True
    placed = place(proposal.path, page, proposal.section, proposal.text)
    if placed is not None:
        return placed, True
    return page.rstrip("\n") + "\n\n" + proposal.text.strip("\n") + "\n", False


def _owners(clone: Path, subdir: str, path: str, page: str | None) -> list[str]:
    """The page's front matter `owner`, else its CODEOWNERS owners."""
    written = ""
    if page is not None:
        try:
            written = parse_document(path, page.encode("utf-8"), AccessRules({}), _MAX_PAGE_BYTES).owner
        except DocumentError:
            written = ""
    own = Ownership({path: written} if written else {}).with_repository(clone, subdir)
    return own.owners_for(path)


def _where(proposal: Proposal) -> str:
    return f"{proposal.path} › {proposal.section}" if proposal.section else proposal.path


def _title(proposal: Proposal) -> str:
    last = proposal.section.split(SEPARATOR)[-1].strip()
    return f"docs: add to {proposal.path}" + (f" › {last}" if last else "")


def _commit_body(proposal: Proposal) -> str:
    return f"Proposed from Slack by {proposal.proposer}."


def _co_author(proposal: Proposal) -> str:
    email = proposal.proposer_email.strip()
    return f"{proposal.proposer} <{email}>" if email and "@" in email and "\n" not in email else ""


def _request_body(proposal: Proposal) -> str:
    asked = f"> {proposal.question.strip()}" if proposal.question.strip() else "A question asked in Slack."
    lines = [f"A docs change proposed from Slack by {proposal.proposer}, answering:", "", asked, "",
             f"Where: `{proposal.path}`" + (f" › {proposal.section}" if proposal.section else "")]
    if proposal.thread_url:
        lines.append(f"Thread: {proposal.thread_url}")
    lines += ["", "The text is added as written; review it before merging."]
    return "\n".join(lines)
