"""A docs change proposal, pushed with real git over HTTP (`git http-backend`) to a local forge
that answers GitHub's or GitLab's REST calls (issue 53 item 3)."""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from proposals.branch import ProposalError, push_ref
from proposals.forge import ForgeConfig
from proposals.propose import Proposal, Target, propose
from tests.standins.forge import LocalForge

TOKEN = "forge-token-9f8e7d"
DEPLOY = """---
title: Deploying
owner: "@bob"
---
# Deploying

## Staging

Deploy to staging with `make stage`.

## Production

Ask the on-call lead.
"""
PROPOSAL = Proposal("ops/deploy.md", "Staging", "Staging deploys need the VPN on.", "Carol",
                    "carol@example.com", "How do I deploy to staging?", "https://acme.slack.com/archives/C1/p1")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def seed(bare: Path, work: Path, files: dict[str, str]) -> str:
    """`files` committed on main and pushed to `bare`; returns the commit."""
    git(work.parent, "init", "--quiet", "--initial-branch=main", str(work))
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text, encoding="utf-8")
    git(work, "add", "-A")
    git(work, "-c", "user.name=Owner", "-c", "user.email=owner@example.com", "commit", "--quiet", "-m", "docs")
    if bare is not work:
        git(work, "push", "--quiet", str(bare), "main")
    return git(work, "rev-parse", "HEAD").strip()


@pytest.fixture(params=["github", "gitlab"])
def forge(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalForge]:
    server = LocalForge(tmp_path / "forge", request.param, TOKEN).start()
    yield server
    server.stop()


def target(forge: LocalForge, project: str, tmp_path: Path, branch: str = "main", token: str = TOKEN) -> Target:
    url = forge.git_url(project).replace("http://", f"http://docsbot:{token}@")
    return Target(url, branch, "docs", tmp_path / "proposals",
                  forge=ForgeConfig(forge.kind, forge.api_url, project, token))


async def test_a_proposal_is_one_commit_on_a_docsbot_branch_and_a_request_with_the_owners(
        forge: LocalForge, tmp_path: Path) -> None:
    project = "acme/handbook" if forge.kind == "github" else "acme/docs/handbook"
    main = seed(forge.repository(project), tmp_path / "seed", {
        "docs/ops/deploy.md": DEPLOY, "docs/ops/other.md": "# Other\n",
        ".github/CODEOWNERS": "/docs/ops/ @alice @acme/docs-team\n"})

    done = await propose(PROPOSAL, target(forge, project, tmp_path, branch="" if forge.kind == "github" else "main"))

    refs = forge.refs(project)
    assert refs["refs/heads/main"] == main  # nothing else moved
    assert set(refs) == {"refs/heads/main", f"refs/heads/{done.branch}"} and done.branch.startswith("docsbot/")
    assert done.placed and done.pushed and done.number == 1 and done.url.endswith("1")
    bare = forge.root / f"{project}.git"
    assert git(bare, "diff", "--name-only", main, done.branch).split() == ["docs/ops/deploy.md"]
    page = git(bare, "show", f"{done.branch}:docs/ops/deploy.md")
    assert "make stage`.\n\nStaging deploys need the VPN on.\n\n## Production" in page
    assert page.startswith("---\ntitle: Deploying\nowner: \"@bob\"\n---\n")
    message = git(bare, "log", "-1", "--format=%an <%ae>%n%B", done.branch)
    assert message.startswith("docsbot <docsbot@users.noreply.invalid>\ndocs: add to ops/deploy.md › Staging")
    assert "Co-authored-by: Carol <carol@example.com>" in message
    assert git(bare, "rev-parse", f"{done.branch}^").strip() == main

    [request] = forge.requests[project]
    assert (request.head, request.base) == (done.branch, "main")
    assert "> How do I deploy to staging?" in request.body and PROPOSAL.thread_url in request.body
    assert done.reviewers == ("@bob",)  # the front matter's owner wins over CODEOWNERS
    if forge.kind == "github":
        assert request.reviewers == ["bob"] and "bob" in forge.collaborators
        assert [c.path for c in forge.calls] == ["/repos/acme/handbook", "/repos/acme/handbook/pulls",
                                                 "/repos/acme/handbook/pulls/1/requested_reviewers"]
    else:
        assert request.reviewer_ids == [sorted(forge.collaborators).index("bob") + 1]
        assert forge.calls[-1].path == "/api/v4/projects/acme%2Fdocs%2Fhandbook/merge_requests"
        assert forge.calls[-1].body and forge.calls[-1].body["remove_source_branch"] is True


async def test_codeowners_review_when_the_page_names_none_and_a_refused_reviewer_is_said(
        forge: LocalForge, tmp_path: Path) -> None:
    seed(forge.repository("acme/handbook"), tmp_path / "seed", {
        "docs/ops/deploy.md": DEPLOY.replace('owner: "@bob"\n', ""),
        ".github/CODEOWNERS": "/docs/ops/ @alice @mallory @acme/docs-team\n"})
    done = await propose(PROPOSAL, target(forge, "acme/handbook", tmp_path))
    assert done.reviewers == ("@alice", "@mallory", "@acme/docs-team")
    [request] = forge.requests["acme/handbook"]
    if forge.kind == "github":  # mallory is no collaborator: GitHub refuses the whole request, the pull stays
        assert request.reviewers == [] and "reviewers not requested" in done.note and "HTTP 422" in done.note
    else:
        assert request.reviewer_ids == [sorted(forge.collaborators).index("alice") + 1]
        assert done.note == "no GitLab user named mallory"


async def test_a_section_that_cannot_be_placed_pushes_nothing_and_leaves_a_patch(
        forge: LocalForge, tmp_path: Path) -> None:
    main = seed(forge.repository("acme/handbook"), tmp_path / "seed", {"docs/ops/deploy.md": DEPLOY})
    wrong = Proposal("ops/deploy.md", "Billing", "Invoices go out monthly.", "Carol")
    done = await propose(wrong, target(forge, "acme/handbook", tmp_path))
    assert not done.placed and not done.pushed and done.url == ""
    assert forge.refs("acme/handbook") == {"refs/heads/main": main}
    assert not forge.requests.get("acme/handbook")
    assert done.patch is not None and "+Invoices go out monthly." in done.patch.read_text()
    assert "could not be placed in ops/deploy.md › Billing" in done.note


async def test_a_wrong_token_fails_in_one_line_that_never_holds_it(forge: LocalForge, tmp_path: Path) -> None:
    main = seed(forge.repository("acme/handbook"), tmp_path / "seed", {"docs/ops/deploy.md": DEPLOY})
    wrong = "wrong-token-1234"
    with pytest.raises(ProposalError) as raised:
        await propose(PROPOSAL, target(forge, "acme/handbook", tmp_path, token=wrong))
    assert wrong not in str(raised.value) and TOKEN not in str(raised.value) and "\n" not in str(raised.value)
    assert forge.refs("acme/handbook") == {"refs/heads/main": main}


async def test_a_local_repository_gets_the_branch_and_a_patch_and_a_new_page(tmp_path: Path) -> None:
    repo = tmp_path / "handbook"
    main = seed(repo, repo, {"docs/ops/deploy.md": DEPLOY})
    new = Proposal("ops/vpn.md", "", "Install the VPN client from the portal.", "Carol", new_title="VPN")
    done = await propose(new, Target(str(repo), "main", "docs", tmp_path / "proposals", local=True))
    assert done.placed and done.pushed and done.url == "" and done.patch is not None
    assert git(repo, "rev-parse", "main").strip() == main and git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", f"{done.branch}:docs/ops/vpn.md") == "# VPN\n\nInstall the VPN client from the portal.\n"
    applied = tmp_path / "applied"
    git(tmp_path, "clone", "--quiet", str(repo), str(applied))
    git(applied, "-c", "user.name=O", "-c", "user.email=o@example.com", "am", "--quiet", str(done.patch))
    assert (applied / "docs/ops/vpn.md").read_text() == "# VPN\n\nInstall the VPN client from the portal.\n"


@pytest.mark.parametrize("branch", ["main", "refs/heads/main", "docsbot/../main", "docsbot/", "docsbot/a b",
                                    "feature/docsbot/x"])
def test_only_docsbot_branches_are_ever_pushed(branch: str) -> None:
    with pytest.raises(ProposalError, match="docsbot pushes only to docsbot/"):
        push_ref(branch)
    assert push_ref("docsbot/add-vpn-1a2b3c") == "refs/heads/docsbot/add-vpn-1a2b3c"
