"""Pull requests (GitHub) and merge requests (GitLab) opened through the forge's REST API.

GitHub: `POST /repos/{owner}/{repo}/pulls` (`title`, `head`, `base`, `body`), then
`POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers` (`reviewers`: logins,
`team_reviewers`: team slugs); `GET /repos/{owner}/{repo}` for the default branch. Bearer token, the API version header.
GitLab: `POST /projects/:id/merge_requests` (`source_branch`, `target_branch`, `title`,
`description`, `reviewer_ids`), the project's id being its URL-encoded path; reviewers' ids from
`GET /users?username=`; `GET /projects/:id` for the default branch.
`PRIVATE-TOKEN` header. The token is never in a message: errors name the status and the forge's
own `message`, cut short.

Reviewers come from the page's owners (CODEOWNERS or front matter, rag/owners.py): `@user`
and, on GitHub, `@org/team`. A reviewer the forge refuses (not a collaborator) does not undo the
request: it is said in `Opened.note`.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from proposals.branch import ProposalError

Kind = Literal["github", "gitlab"]
DEFAULT_API = {"github": "https://api.github.com", "gitlab": "https://gitlab.com/api/v4"}


@dataclass(frozen=True)
class ForgeConfig:
    kind: Kind
    api_url: str
    project: str  # "owner/name" (GitHub) or the project's path "group/sub/name" (GitLab)
    token: str
    timeout_s: float = 20.0


@dataclass(frozen=True)
class Opened:
    number: int  # GitHub's pull number, GitLab's merge request iid
    url: str  # the page people review it on
    note: str = ""  # what did not go as asked (reviewers refused), "" else


class Forge:
    def __init__(self, config: ForgeConfig) -> None:
        self.config = config
        self._base = config.api_url.rstrip("/")

    async def default_branch(self) -> str:
        reply = await self._call("GET", self._project_path())
        branch = reply.get("default_branch") if isinstance(reply, dict) else None
        if not isinstance(branch, str) or not branch:
            raise ProposalError(f"{self.config.kind}: the project's default branch is not in its reply")
        return branch

    async def open(self, branch: str, base: str, title: str, body: str, reviewers: list[str]) -> Opened:
        if self.config.kind == "github":
            return await self._open_pull(branch, base, title, body, reviewers)
        return await self._open_merge_request(branch, base, title, body, reviewers)

    async def _open_pull(self, branch: str, base: str, title: str, body: str, reviewers: list[str]) -> Opened:
        pull = await self._call("POST", f"{self._project_path()}/pulls",
                                {"title": title, "head": branch, "base": base, "body": body})
        number, url = _int(pull.get("number")), str(pull.get("html_url") or "")
        people = [r.lstrip("@") for r in reviewers if r.startswith("@") and "/" not in r]
        teams = [r.split("/", 1)[1] for r in reviewers if r.startswith("@") and "/" in r]
        note = ""
        if people or teams:
            try:
                await self._call("POST", f"{self._project_path()}/pulls/{number}/requested_reviewers",
                                 {"reviewers": people, "team_reviewers": teams})
            except ProposalError as exc:
                note = f"reviewers not requested ({exc})"
        return Opened(number, url, note)

    async def _open_merge_request(self, branch: str, base: str, title: str, body: str,
                                  reviewers: list[str]) -> Opened:
        ids, missing = [], []
        for name in (r.lstrip("@") for r in reviewers if r.startswith("@") and "/" not in r):
            users = await self._call("GET", f"/users?username={quote(name)}")
            found = [u.get("id") for u in users if isinstance(u, dict)] if isinstance(users, list) else []
            if found:
                ids.append(_int(found[0]))
            else:
                missing.append(name)
        request = await self._call("POST", f"{self._project_path()}/merge_requests", {
            "source_branch": branch, "target_branch": base, "title": title, "description": body,
            "reviewer_ids": ids, "remove_source_branch": True})
        note = f"no GitLab user named {', '.join(missing)}" if missing else ""
        return Opened(_int(request.get("iid")), str(request.get("web_url") or ""), note)

    def _project_path(self) -> str:
        if self.config.kind == "github":
            return f"/repos/{self.config.project}"
        return f"/projects/{quote(self.config.project, safe='')}"

    def _headers(self) -> dict[str, str]:
        if self.config.kind == "github":
            return {"Authorization": f"Bearer {self.config.token}", "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": "2022-11-28"}
        return {"PRIVATE-TOKEN": self.config.token}

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        import aiohttp  # here: a process that proposes nothing never loads it

        what = f"{self.config.kind} {method} {path.split('?')[0]}"
        try:
            timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                async with session.request(method, self._base + path, json=body, headers=self._headers()) as reply:
                    data: Any = await reply.json(content_type=None) if reply.content_length != 0 else {}
                    if reply.status >= 300:
                        said = data.get("message") if isinstance(data, dict) else None
                        raise ProposalError(f"{what}: HTTP {reply.status}" + (f": {str(said)[:200]}" if said else ""))
                    return data if data is not None else {}
        except asyncio.TimeoutError:
            raise ProposalError(f"{what}: no reply in {self.config.timeout_s:g}s") from None
        except (aiohttp.ClientError, ValueError) as exc:
            raise ProposalError(f"{what}: {type(exc).__name__}") from None


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ProposalError("the forge's reply has no number for the request it opened")
