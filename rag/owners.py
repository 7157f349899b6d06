"""Who owns a document: its front matter's `owner`, else the docs repository's CODEOWNERS.

CODEOWNERS follows GitHub's rules: the file is the first of `.github/CODEOWNERS`, `CODEOWNERS`
and `docs/CODEOWNERS` in the repository; a line is a gitignore-style pattern and its owners
(`@user`, `@org/team`, an e-mail); `#` starts a comment; the LAST matching pattern wins, and a
pattern with no owners un-assigns what earlier ones gave. Patterns: a leading `/` (or any `/`
but a trailing one) anchors to the repository root, otherwise the pattern matches at any depth;
`*` and `?` never cross a `/`; `**` spans directories; a trailing `/` matches a directory's
contents; a pattern matches a file or everything under a directory of that name, except that a
last segment of `*` alone (`docs/*`) matches only the files directly inside. What GitHub does not
support (`!` negation, `[ ]` ranges) and lines with an owner that is none of the three forms are
skipped, and said in `CodeOwners.problems`, as GitHub skips them.

The index records an `Ownership` snapshot in its metadata each time it is written from the docs
(`docsbot index`, every sync): replicas that never see the repository still know the owners.
With several sources each source records its own (its CODEOWNERS, its documents' front matter,
its paths without the `<source>:` prefix); `index_ownership` reads the index's owners either way.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rag.documents import Document, DocumentError, inside
from rag.paths import source_of, sources_meta

PLACES = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")  # GitHub's order: the first found is used
MAX_BYTES = 3_000_000  # GitHub ignores a CODEOWNERS file over 3 MB
_OWNER = re.compile(r"@[\w.-]+(?:/[\w.-]+)?|[^@\s]+@[^@\s]+\.[^@\s]+")
_TOKENS = re.compile(r"(?:\\.|\S)+")  # whitespace splits tokens unless escaped ("a\ b")


@dataclass(frozen=True)
class Rule:
    pattern: str
    owners: tuple[str, ...]
    line: int
    regex: re.Pattern[str] = field(repr=False, compare=False)


@dataclass(frozen=True)
class CodeOwners:
    rules: tuple[Rule, ...] = ()
    problems: tuple[str, ...] = ()  # "line N: why it was skipped"

    def owners_for(self, path: str) -> list[str]:
        """The owners of a repository-relative path: those of the last rule that matches."""
        path = path.strip("/")
        for rule in reversed(self.rules):
            if rule.regex.match(path):
                return list(rule.owners)
        return []


def parse_codeowners(text: str) -> CodeOwners:
    rules, problems = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tokens = _TOKENS.findall(line)
        comment = next((i for i, token in enumerate(tokens) if token.startswith("#")), len(tokens))
        pattern, owners = tokens[0].replace("\\ ", " "), tokens[1:comment]
        bad = next((owner for owner in owners if not _OWNER.fullmatch(owner)), None)
        if pattern.startswith("!") or "[" in pattern or "]" in pattern:
            problems.append(f"line {number}: {pattern!r} uses syntax CODEOWNERS does not support (! or [ ])")
        elif bad is not None:
            problems.append(f"line {number}: {bad!r} is not an @user, @org/team or e-mail address")
        else:
            rules.append(Rule(pattern, tuple(owners), number, pattern_regex(pattern)))
    return CodeOwners(tuple(rules), tuple(problems))


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression a whole repository-relative file path must match."""
    dir_only = pattern.endswith("/") and pattern.strip("/") != ""
    body = pattern.strip("/")
    anchored = pattern.startswith("/") or "/" in body
    segments = body.split("/") if body else ["**"]
    out = "" if anchored else "(?:.*/)?"
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            out += ".*" if last else "(?:[^/]*/)*"
        else:
            out += _glob(segment) + ("" if last else "/")
    if dir_only:
        out += "/.+"
    elif segments[-1] == "*" and len(segments) > 1:
        pass  # `docs/*`: the files directly in docs/, not deeper (GitHub's documented exception)
    elif segments[-1] != "**":
        out += "(?:/.*)?"  # a file, or everything under a directory of that name
    return re.compile(out + r"\Z")


def _glob(segment: str) -> str:
    parts = []
    for char in segment:
        parts.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
    return "".join(parts)


def find_codeowners(root: Path) -> tuple[str, str] | None:
    """(path relative to root, text) of the CODEOWNERS file GitHub would use, if any. A link,
    a file that is not UTF-8 or over GitHub's size limit is not read."""
    for place in PLACES:
        try:
            path = inside(root, place)
        except DocumentError:  # a symbolic link on the way: it could point anywhere on the host
            continue
        try:
            if path.is_file() and path.stat().st_size <= MAX_BYTES:
                return place, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return None


def front_matter_of(docs: Iterable[Document]) -> dict[str, str]:
    """path -> front matter `owner` ("" for none) of each document."""
    return {doc.path: doc.owner for doc in docs}


def split_owners(value: str) -> list[str]:
    """A front matter `owner`: one name or several, separated by commas or spaces."""
    return [part for part in re.split(r"[\s,]+", value.strip()) if part]


@dataclass(frozen=True)
class Ownership:
    """What the index knows of owners: each document's front matter `owner` (it wins) and the
    repository's CODEOWNERS, whose paths start at the repository root: `prefix` is where the
    docs folder is inside it (DOCSBOT_REPO_SUBDIR)."""

    front_matter: Mapping[str, str] = field(default_factory=dict)
    codeowners_file: str = ""
    codeowners_text: str = ""
    prefix: str = ""
    codeowners: CodeOwners = field(init=False, repr=False, compare=False)  # parsed from the text

    def __post_init__(self) -> None:
        object.__setattr__(self, "codeowners", parse_codeowners(self.codeowners_text))

    def owners_for(self, doc_path: str) -> list[str]:
        written = split_owners(self.front_matter.get(doc_path, ""))
        if written:
            return written
        prefix = self.prefix.strip("/")
        return self.codeowners.owners_for(f"{prefix}/{doc_path}" if prefix else doc_path)

    def with_front_matter(self, owners: Mapping[str, str], replaced: Iterable[str] = ()) -> Ownership:
        """This snapshot after a write: the `replaced` paths forgotten, then `owners` (path ->
        front matter `owner`, "" for none; see `front_matter_of`) of the documents read anew."""
        gone = set(replaced) | set(owners)
        front = {path: owner for path, owner in self.front_matter.items() if path not in gone}
        front.update((path, owner.strip()) for path, owner in owners.items() if owner.strip())
        return Ownership(front, self.codeowners_file, self.codeowners_text, self.prefix)

    def with_repository(self, repo_root: Path, prefix: str = "") -> Ownership:
        """This snapshot with the CODEOWNERS file of the repository at `repo_root` read anew."""
        found = find_codeowners(repo_root) or ("", "")
        return Ownership(self.front_matter, found[0], found[1], prefix.strip("/"))

    def to_meta(self) -> dict[str, Any]:
        return {"front_matter": dict(self.front_matter), "codeowners_file": self.codeowners_file,
                "codeowners": self.codeowners_text, "prefix": self.prefix}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Ownership:
        """The snapshot of an index's metadata (`meta["ownership"]`); empty when it has none."""
        value = meta.get("ownership") or {}
        return cls(dict(value.get("front_matter") or {}), str(value.get("codeowners_file") or ""),
                   str(value.get("codeowners") or ""), str(value.get("prefix") or ""))


class Owners(Protocol):
    def owners_for(self, doc_path: str) -> list[str]: ...


@dataclass(frozen=True)
class SourcesOwnership:
    """The owners of an index of several sources: a stored path `<source>:<path>` is owned as its
    source's own snapshot says of `<path>`; a source that recorded none owns nothing."""

    by_source: Mapping[str, Ownership]

    def owners_for(self, doc_path: str) -> list[str]:
        name, path = source_of(doc_path)
        own = self.by_source.get(name)
        return own.owners_for(path) if own is not None else []


def index_ownership(meta: Mapping[str, Any]) -> Owners:
    """The owners an index's metadata knows: each source's with several sources, else its own."""
    sources = sources_meta(meta)
    if sources:
        return SourcesOwnership({name: Ownership.from_meta(own) for name, own in sources.items()})
    return Ownership.from_meta(meta)
