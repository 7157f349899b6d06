"""Owners of documents: GitHub's CODEOWNERS rules on real-style files, where the file is found, the
front matter `owner` winning over it, and the snapshot a git sync records for the replicas."""
from __future__ import annotations

from pathlib import Path

import pytest

from foundation.wiring import sync_config
from eval.repos import commit_files
from rag import LocalMiniLM, Ownership, find_codeowners, parse_codeowners
from rag.store.search import Store
from sync.service import run_sync
from tests.support.sync import new_repo, sync_settings

# GitHub's own example file (docs.github.com, "About code owners"), trimmed: every rule kind.
GITHUB_EXAMPLE = """\
# This is a comment.
# Each line is a file pattern followed by one or more owners.

# These owners will be the default owners for everything in
# the repo. Unless a later match takes precedence,
# @global-owner1 and @global-owner2 will be requested for
# review when someone opens a pull request.
*       @global-owner1 @global-owner2

# Order is important; the last matching pattern takes the most
# precedence. When someone opens a pull request that only
# modifies JS files, only @js-owner and not the global
# owner(s) will be requested for a review.
*.js    @js-owner #This is an inline comment.

# You can also use email addresses if you prefer. They'll be
# used to look up users just like we do for commit author
# emails.
*.go docs@example.com

# Teams can be specified as code owners as well.
*.txt @octo-org/octocats

# In this example, @doctocat owns any files in the build/logs
# directory at the root of the repository and any of its
# subdirectories.
/build/logs/ @doctocat

# The `docs/*` pattern will match files like
# `docs/getting-started.md` but not further nested files like
# `docs/build-app/troubleshooting.md`.
docs/*  docs@example.com

# In this example, @octocat owns any file in an apps directory
# anywhere in your repository.
apps/ @octocat

# In this example, @doctocat owns any file in the `/docs`
# directory in the root of your repository and any of its
# subdirectories.
/docs/ @doctocat

# In this example, any change inside the `/scripts` directory
# will require approval from @doctocat or @octocat.
/scripts/ @doctocat @octocat

# In this example, @octocat owns any file in a `/logs` directory such as
# `/build/logs`, `/scripts/logs`, and `/deeply/nested/logs`. Any changes
# in a `/logs` directory will require approval from @octocat.
**/logs @octocat

# In this example, @octocat owns any file in the `/apps`
# directory in the root of your repository except for the `/apps/github`
# subdirectory, as its owners are left empty. Without an owner, changes
# to `apps/github` can be made with the approval of any user who has
# write access to the repository.
/apps/ @octocat
/apps/github

# In this example, @octocat owns any file in the `/apps`
# directory in the root of your repository except for the `/apps/github`
# subdirectory, as this subdirectory has its own owner @doctocat
/apps/ @octocat
/apps/github @doctocat
"""


@pytest.mark.parametrize("path, owners", [
    ("README.md", ["@global-owner1", "@global-owner2"]),  # only `*`
    ("src/app.js", ["@js-owner"]),  # a later glob wins; the inline comment is no owner
    ("cmd/main.go", ["docs@example.com"]),
    ("notes/todo.txt", ["@octo-org/octocats"]),
    ("build/logs/today.log", ["@octocat"]),  # /build/logs/ then **/logs, which comes later
    ("build/logs/old/2023.log", ["@octocat"]),
    ("docs/getting-started.md", ["@doctocat"]),  # docs/* then /docs/, which comes later
    ("docs/build-app/troubleshooting.md", ["@doctocat"]),
    ("lib/apps/main.py", ["@octocat"]),  # `apps/` is unanchored: an apps directory anywhere
    ("scripts/deploy.sh", ["@doctocat", "@octocat"]),
    ("deeply/nested/logs/x.txt", ["@octocat"]),  # **/logs beats *.txt, being later
    ("apps/web/index.html", ["@octocat"]),
    ("apps/github/action.yml", ["@doctocat"]),  # the last rule for it, after the un-assigning one
])
def test_githubs_example_file(path: str, owners: list[str]) -> None:
    codeowners = parse_codeowners(GITHUB_EXAMPLE)
    assert codeowners.problems == ()
    assert codeowners.owners_for(path) == owners


def test_last_match_wins_and_a_pattern_without_owners_unassigns() -> None:
    codeowners = parse_codeowners("""
        *                    @acme/docs-writers
        /runbooks/           @acme/sre
        /runbooks/legacy/
        runbooks/*.md        @acme/sre-leads     # anchored: a slash in the middle
        *.md                 alice@example.com
        /handbook/**/pay*.md @acme/payroll
        handbook/            @acme/people        # unanchored directory: any handbook/ folder
    """)
    owners = codeowners.owners_for
    assert owners("runbooks/deploy.md") == ["alice@example.com"]  # *.md is later than runbooks/*.md
    assert owners("runbooks/deploy.txt") == ["@acme/sre"]
    assert owners("runbooks/legacy/old.txt") == []  # un-assigned
    assert owners("runbooks/legacy/old.md") == ["alice@example.com"]  # ... until a later pattern matches
    assert owners("handbook/payroll/payslips.md") == ["@acme/people"]  # the last line wins over **
    assert owners("eu/handbook/pay.md") == ["@acme/people"]
    assert owners("guides/setup.rst") == ["@acme/docs-writers"]
    early = parse_codeowners("handbook/ @acme/people\n/handbook/**/pay*.md @acme/payroll\n")
    assert early.owners_for("handbook/2024/payslips.md") == ["@acme/payroll"]  # ** spans folders
    assert early.owners_for("handbook/payslips.md") == ["@acme/payroll"]  # ... or none
    assert early.owners_for("other/handbook/payslips.md") == ["@acme/people"]  # anchored: not here


def test_patterns_github_does_not_support_are_skipped_and_said() -> None:
    codeowners = parse_codeowners("*.md @docs\n!drafts/*.md @nobody\n[abc].md @nobody\nguide.md not-an-owner\n")
    assert codeowners.owners_for("drafts/a.md") == ["@docs"] and codeowners.owners_for("guide.md") == ["@docs"]
    assert [problem.split(":")[0] for problem in codeowners.problems] == ["line 2", "line 3", "line 4"]


def test_the_file_github_would_use(tmp_path: Path) -> None:
    assert find_codeowners(tmp_path) is None
    for place, owner in (("docs/CODEOWNERS", "@third"), ("CODEOWNERS", "@second"), (".github/CODEOWNERS", "@first")):
        (tmp_path / place).parent.mkdir(exist_ok=True)
        (tmp_path / place).write_text(f"* {owner}\n")
        assert find_codeowners(tmp_path) == (place, f"* {owner}\n")  # .github/, then the root, then docs/
    outside = tmp_path.parent / "secret.txt"
    outside.write_text("* @intruder\n")
    (tmp_path / ".github" / "CODEOWNERS").unlink()
    (tmp_path / ".github" / "CODEOWNERS").symlink_to(outside)
    assert find_codeowners(tmp_path) == ("CODEOWNERS", "* @second\n")  # a link is never followed


def test_front_matter_owner_wins_and_paths_start_at_the_repository_root() -> None:
    owners = Ownership({"runbooks/rollback.md": "platform-team, @carol"}, ".github/CODEOWNERS",
                       "/docs/ @acme/docs\n/docs/runbooks/ @acme/sre\n", prefix="docs")
    assert owners.owners_for("runbooks/rollback.md") == ["platform-team", "@carol"]
    assert owners.owners_for("runbooks/incident.md") == ["@acme/sre"]  # docs/runbooks/incident.md in the repo
    assert owners.owners_for("handbook/pay.md") == ["@acme/docs"]
    assert Ownership.from_meta({"ownership": owners.to_meta()}) == owners
    assert Ownership.from_meta({}).owners_for("a.md") == []  # an index written before owners were recorded


def test_a_git_sync_records_the_owners_and_keeps_them_current(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source, repo_subdir="docs")
    commit_files(source, {
        ".github/CODEOWNERS": "/docs/ @acme/docs\n/docs/runbooks/ @acme/sre\n",
        "docs/runbooks/rollback.md": "---\nowner: platform-team\n---\n# Rollback\n\nRevert the deploy.\n",
        "docs/runbooks/incident.md": "# Incidents\n\nPage the on-call engineer first.\n",
        "docs/handbook/pay.md": "# Pay\n\nSalaries are paid on the 25th of each month.\n",
    })
    assert run_sync(sync_config(settings), embedder).mode == "reconcile"
    owners = Ownership.from_meta(Store(settings.data_dir).meta())
    assert owners.codeowners_file == ".github/CODEOWNERS" and owners.prefix == "docs"
    assert [owners.owners_for(p) for p in ("runbooks/rollback.md", "runbooks/incident.md", "handbook/pay.md")] == [
        ["platform-team"], ["@acme/sre"], ["@acme/docs"]]

    # An incremental sync: a front matter owner dropped and one added, a page deleted, CODEOWNERS edited.
    commit_files(source, {
        ".github/CODEOWNERS": "/docs/ @acme/docs\n/docs/runbooks/ @acme/sre-leads\n",
        "docs/runbooks/rollback.md": "# Rollback\n\nRevert the deploy.\n",
        "docs/handbook/pay.md": "---\nowner: payroll@example.com\n---\n# Pay\n\nSalaries are paid on the 25th.\n",
        "docs/runbooks/incident.md": None,
    })
    assert run_sync(sync_config(settings), embedder).mode == "incremental"
    owners = Ownership.from_meta(Store(settings.data_dir).meta())
    assert dict(owners.front_matter) == {"handbook/pay.md": "payroll@example.com"}
    assert owners.owners_for("runbooks/rollback.md") == ["@acme/sre-leads"]
    assert owners.owners_for("handbook/pay.md") == ["payroll@example.com"]

    # Only CODEOWNERS changes (outside the docs folder): the next sync still reads it again.
    commit_files(source, {".github/CODEOWNERS": "* @acme/everyone\n"})
    run_sync(sync_config(settings), embedder)
    owners = Ownership.from_meta(Store(settings.data_dir).meta())
    assert owners.owners_for("runbooks/rollback.md") == ["@acme/everyone"]
