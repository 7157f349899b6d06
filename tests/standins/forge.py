"""A local forge: bare repositories served over git's smart HTTP protocol by the real
`git http-backend`, and the REST calls docsbot makes of GitHub or GitLab, as their published API
descriptions give them (paths, required fields, status codes, error bodies), answered from the
same repositories: a pull request's head and base must be branches the repository has.

Both the git transport and the API need the token: git over HTTP Basic (any user name, the token
as password, after a 401 challenge as GitHub and GitLab send), the API by `Authorization: Bearer`
(GitHub) or `PRIVATE-TOKEN` (GitLab). Every API request is recorded (method, path, JSON body)
for the tests to check.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, unquote

from aiohttp import web

from eval.standins.threaded import ThreadedServer

_GITHUB = re.compile(r"^/repos/(?P<project>[^/]+/[^/]+)(?P<rest>/.*)?$")
_GITLAB = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)(?P<rest>/.*)?$")


@dataclass
class Call:
    method: str
    path: str
    body: dict[str, Any] | None


@dataclass
class Request:
    number: int
    head: str
    base: str
    title: str
    body: str
    reviewers: list[str] = field(default_factory=list)
    team_reviewers: list[str] = field(default_factory=list)
    reviewer_ids: list[int] = field(default_factory=list)
    state: str = "open"


class LocalForge(ThreadedServer):
    def __init__(self, root: Path, kind: Literal["github", "gitlab"], token: str = "forge-token") -> None:
        super().__init__()
        self.root, self.kind, self.token = root, kind, token
        self.calls: list[Call] = []
        self.requests: dict[str, list[Request]] = {}
        self.collaborators = {"alice", "bob"}  # reviewers GitHub accepts; GitLab users (ids 1, 2, ...)
        self.teams = {"docs-team"}

    def repository(self, project: str, default_branch: str = "main") -> Path:
        """A bare repository for `project` ("owner/name"), its HEAD on `default_branch`."""
        bare = self.root / f"{project}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "--quiet", "--bare", f"--initial-branch={default_branch}", str(bare)],
                       check=True)
        subprocess.run(["git", "-C", str(bare), "config", "http.receivepack", "true"], check=True)
        return bare

    def git_url(self, project: str) -> str:
        return f"http://127.0.0.1:{self.port}/git/{project}.git"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}" + ("/api/v4" if self.kind == "gitlab" else "")

    def refs(self, project: str) -> dict[str, str]:
        out = subprocess.run(["git", "-C", str(self.root / f"{project}.git"), "for-each-ref",
                              "--format=%(refname) %(objectname)"], capture_output=True, text=True, check=True)
        return {name: sha for name, sha in (line.split(" ", 1) for line in out.stdout.splitlines())}

    def routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._dispatch)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        raw = request.raw_path.split("?", 1)[0]
        if raw.startswith("/git/"):
            return await self._git(request, raw.removeprefix("/git"))
        body = await request.json() if request.can_read_body else None
        self.calls.append(Call(request.method, request.raw_path, body))
        if not self._authorised(request):
            return _error(401, "Bad credentials" if self.kind == "github" else "401 Unauthorized")
        if self.kind == "github":
            return self._github(request.method, raw, body)
        return self._gitlab(request.method, raw, parse_qs(request.query_string), body)

    def _authorised(self, request: web.Request) -> bool:
        if self.kind == "github":
            return request.headers.get("Authorization") in (f"Bearer {self.token}", f"token {self.token}")
        return request.headers.get("PRIVATE-TOKEN") == self.token

    def _branches(self, project: str) -> set[str]:
        return {ref.removeprefix("refs/heads/") for ref in self.refs(project) if ref.startswith("refs/heads/")}

    def _github(self, method: str, path: str, body: dict[str, Any] | None) -> web.Response:
        found = _GITHUB.match(path)
        if not found or not (self.root / f"{found['project']}.git").is_dir():
            return _error(404, "Not Found")
        project, rest = found["project"], found["rest"] or ""
        pulls = self.requests.setdefault(project, [])
        if method == "GET" and rest == "":
            return web.json_response({"full_name": project, "default_branch": self._default(project)})
        if method == "POST" and rest == "/pulls":
            if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in ("head", "base")):
                return _error(422, "Validation Failed")
            if not isinstance(body.get("title"), str) or not body["title"]:
                return _error(422, "Validation Failed")
            branches = self._branches(project)
            if body["head"] not in branches or body["base"] not in branches:
                return _error(422, "Validation Failed")
            if any(p.head == body["head"] and p.state == "open" for p in pulls):
                return _error(422, "Validation Failed")
            pull = Request(len(pulls) + 1, body["head"], body["base"], body["title"], str(body.get("body") or ""))
            pulls.append(pull)
            return web.json_response(self._pull_json(project, pull), status=201)
        number = re.fullmatch(r"/pulls/(\d+)(/requested_reviewers)?", rest)
        if not number or int(number[1]) > len(pulls):
            return _error(404, "Not Found")
        pull = pulls[int(number[1]) - 1]
        if method == "GET" and not number[2]:
            return web.json_response(self._pull_json(project, pull))
        if method == "POST" and number[2]:
            people, teams = (body or {}).get("reviewers", []), (body or {}).get("team_reviewers", [])
            if not set(people) <= self.collaborators or not set(teams) <= self.teams:
                return _error(422, "Reviews may only be requested from collaborators. One or more of the users "
                                   "or teams you specified is not a collaborator of the repository.")
            pull.reviewers += people
            pull.team_reviewers += teams
            return web.json_response(self._pull_json(project, pull), status=201)
        return _error(404, "Not Found")

    def _gitlab(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any] | None) -> web.Response:
        if method == "GET" and path == "/api/v4/users":
            names = sorted(self.collaborators)
            wanted = query.get("username", [""])[0]
            return web.json_response([{"id": names.index(wanted) + 1, "username": wanted}] if wanted in names else [])
        found = _GITLAB.match(path)
        project = unquote(found["project"]) if found else ""
        if not found or not (self.root / f"{project}.git").is_dir():
            return _error(404, "404 Project Not Found")
        rest = found["rest"] or ""
        requests = self.requests.setdefault(project, [])
        if method == "GET" and rest == "":
            return web.json_response({"path_with_namespace": project, "default_branch": self._default(project)})
        if method == "POST" and rest == "/merge_requests":
            if not isinstance(body, dict) or not all(isinstance(body.get(k), str) and body[k]
                                                     for k in ("source_branch", "target_branch", "title")):
                return _error(400, "400 Bad request - source_branch, target_branch, title are missing")
            branches = self._branches(project)
            if body["source_branch"] not in branches or body["target_branch"] not in branches:
                return _error(422, "422 Unprocessable Entity")
            if any(r.head == body["source_branch"] and r.state == "open" for r in requests):
                return _error(409, "Another open merge request already exists for this source branch")
            request = Request(len(requests) + 1, body["source_branch"], body["target_branch"], body["title"],
                              str(body.get("description") or ""), reviewer_ids=list(body.get("reviewer_ids") or []))
            requests.append(request)
            return web.json_response(self._merge_request_json(project, request), status=201)
        number = re.fullmatch(r"/merge_requests/(\d+)", rest)
        if method == "GET" and number and int(number[1]) <= len(requests):
            return web.json_response(self._merge_request_json(project, requests[int(number[1]) - 1]))
        return _error(404, "404 Not found")

    def _default(self, project: str) -> str:
        head = (self.root / f"{project}.git" / "HEAD").read_text().strip()
        return head.removeprefix("ref: refs/heads/")

    def _pull_json(self, project: str, pull: Request) -> dict[str, Any]:
        return {"number": pull.number, "html_url": f"http://127.0.0.1:{self.port}/{project}/pull/{pull.number}",
                "state": "closed" if pull.state != "open" else "open", "merged": pull.state == "merged",
                "title": pull.title, "body": pull.body, "head": {"ref": pull.head}, "base": {"ref": pull.base},
                "requested_reviewers": [{"login": name} for name in pull.reviewers],
                "requested_teams": [{"slug": name} for name in pull.team_reviewers]}

    def _merge_request_json(self, project: str, request: Request) -> dict[str, Any]:
        state = {"open": "opened"}.get(request.state, request.state)
        return {"iid": request.number, "state": state, "title": request.title, "description": request.body,
                "source_branch": request.head, "target_branch": request.base,
                "web_url": f"http://127.0.0.1:{self.port}/{project}/-/merge_requests/{request.number}",
                "reviewers": [{"id": i} for i in request.reviewer_ids]}

    async def _git(self, request: web.Request, path: str) -> web.StreamResponse:
        """The smart HTTP protocol, by the real `git http-backend` (a CGI program)."""
        given = request.headers.get("Authorization", "")
        password = ""
        if given.startswith("Basic "):
            password = base64.b64decode(given[6:]).decode(errors="replace").partition(":")[2]
        if password != self.token:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="forge"'})
        env = {**os.environ, "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": unquote(path), "REQUEST_METHOD": request.method, "QUERY_STRING": request.query_string,
               "CONTENT_TYPE": request.headers.get("Content-Type", ""), "REMOTE_USER": "docsbot",
               "REMOTE_ADDR": "127.0.0.1", "HTTP_CONTENT_ENCODING": request.headers.get("Content-Encoding", ""),
               "GIT_HTTP_MAX_REQUEST_BUFFER": "100M"}
        data = await request.read()
        env["CONTENT_LENGTH"] = str(len(data))
        proc = await asyncio.create_subprocess_exec("git", "http-backend", stdin=subprocess.PIPE,
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out, _ = await proc.communicate(data)
        head, _, payload = out.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = out.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name.strip()] = value.strip()
        return web.Response(status=status, body=payload, headers=headers)


def _error(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=json.dumps({"message": message}), content_type="application/json")
