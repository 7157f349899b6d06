"""The AsciiDoc preprocessor: `include::` (with Antora resource ids, `tag=`/`tags=`/`lines=`) and
`ifdef::`/`ifndef::`/`ifeval::`/`endif::`, line by line as Asciidoctor's reader does, so an include
inside a listing block fills the listing. Also Antora's component: its antora.yml attributes and
where a resource id (`partial$x.adoc`, `theme:example$y.rb`, an xref's page) lives.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache

import yaml

from rag.formats.asciidoc_inline import subs_attributes
from rag.formats.model import ReadFile

MAX_INCLUDES = 64
MAX_DEPTH = 8

_FAMILIES = {"page": "pages", "partial": "partials", "example": "examples",
             "attachment": "attachments", "image": "images"}
_INCLUDE = re.compile(r"^(\\?)include::([^\[\s]+)\[(.*)\]\s*$")
_CONDITIONAL = re.compile(r"^(\\?)(ifdef|ifndef|ifeval|endif)::([^\[]*)\[(.*)\]\s*$")
_ENTRY = re.compile(r"^:(!?)([\w][\w-]*)(!?):(?:\s+(.*))?$")
_TAG = re.compile(r"\b(tag|end)::(\S+?)\[\]")
_VERBATIM = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|/{4,})\s*$")
_MODULE = re.compile(r"(?:^|/)modules/([^/]+)/")

# What Antora sets on every page (an ifdef:: on them keeps the site's branch).
SITE_ATTRIBUTES = {"env": "site", "env-site": "", "site-gen": "antora", "site-gen-antora": "",
                   "backend-html5": "", "basebackend-html": "", "asciidoctor": "",
                   "safe-mode-name": "safe", "safe-mode-safe": ""}


def component_root(path: str) -> str | None:
    """The folder holding `modules/` (an Antora component's root, where antora.yml is), or None."""
    match = _MODULE.search(path)
    return path[: match.start() + (1 if match.group(0).startswith("/") else 0)] if match else None


def module_of(path: str) -> str:
    match = _MODULE.search(path)
    return match.group(1) if match else "ROOT"


@lru_cache(maxsize=64)
def _component(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return "", ()
    if not isinstance(data, dict):
        return "", ()
    asciidoc = data.get("asciidoc")
    raw = asciidoc.get("attributes") if isinstance(asciidoc, dict) else None
    if not isinstance(raw, dict):
        raw = {}
    attributes = []
    for name, value in raw.items():
        if value is None or value is False:
            continue  # Antora: false or ~ unsets
        shown = "" if value is True else str(value)
        attributes.append((str(name).lower(), shown[:-1] if shown.endswith("@") else shown))
    version = data.get("version")
    attributes.append(("page-component-name", str(data.get("name") or "")))
    attributes.append(("page-component-version", "" if version in (None, False, "~") else str(version)))
    attributes.append(("page-component-title", str(data.get("title") or data.get("name") or "")))
    return str(data.get("name") or ""), tuple(attributes)


def component_attributes(path: str, read: ReadFile) -> tuple[str, dict[str, str]]:
    """The component's name and antora.yml attributes (soft-set `@` stripped, false unset)."""
    root = component_root(path)
    text = read(root + "antora.yml") if root is not None else None
    if not text:
        return "", {}
    name, attributes = _component(text)
    return name, dict(attributes)


def resolve(target: str, from_path: str, component: str) -> str | None:
    """A docs-root-relative path for an include target: an Antora resource id inside this
    component (`partial$x`, `mod:example$y`), else a path relative to the including file."""
    if "$" in target:
        coords, _, rel = target.partition("$")
        parts = coords.split(":")
        family = _FAMILIES.get(parts[-1])
        root = component_root(from_path)
        if family is None or root is None:
            return None
        if len(parts) >= 3 and parts[-3].split("@")[-1] not in ("", component):
            return None  # another component's resource: not in this docs tree
        module = parts[-2] if len(parts) >= 2 and parts[-2] else module_of(from_path)
        joined = posixpath.join(root, "modules", module, family, rel)
    elif "://" in target or target.startswith("/"):
        return None
    else:
        joined = posixpath.join(posixpath.dirname(from_path), target)
    rel_path = posixpath.normpath(joined)
    return None if rel_path.startswith("..") or rel_path == "." else rel_path


def page_path(target: str, from_path: str, component: str) -> str | None:
    """Where an xref's page is (`[version@][component:][module:]path.adoc`), or None."""
    page = target.split("#", 1)[0]
    if not page.endswith(".adoc"):
        return None
    if "$" not in page:
        coords, sep, rel = page.rpartition(":")
        page = f"{coords}:page${rel}" if sep else f"page${rel}"
    return resolve(page, from_path, component)


@dataclass
class Preprocessor:
    """Expands one file's lines; `attributes` are read for conditionals and include targets."""

    read: ReadFile
    component: str
    attributes: dict[str, str]
    includes: list[str] = field(default_factory=list)
    _count: int = 0

    def lines(self, text: str, path: str, depth: int = 0) -> list[str]:
        out: list[str] = []
        skipping: list[bool] = []  # one entry per open conditional: True where it drops lines
        verbatim = ""
        for line in text.split("\n"):
            line = line.rstrip()
            if (cond := _CONDITIONAL.match(line)) and not cond.group(1):
                self._conditional(cond, skipping, out)
                continue
            if any(skipping):
                continue
            if line.startswith(("\\include::", "\\ifdef::", "\\ifndef::", "\\ifeval::", "\\endif::")):
                out.append(line[1:])
                continue
            if (include := _INCLUDE.match(line)) and not include.group(1):
                out.extend(self._include(include.group(2), include.group(3), path, depth))
                continue
            if _VERBATIM.match(line):
                verbatim = "" if line == verbatim else verbatim or line
            elif not verbatim and (entry := _ENTRY.match(line)):
                self._entry(entry)
            out.append(line)
        return out

    def _entry(self, entry: re.Match[str]) -> None:
        name = entry.group(2).lower()
        if entry.group(1) or entry.group(3):
            self.attributes.pop(name, None)
        else:
            self.attributes[name] = subs_attributes(entry.group(4) or "", self.attributes)

    def _conditional(self, cond: re.Match[str], skipping: list[bool], out: list[str]) -> None:
        kind, names, content = cond.group(2), cond.group(3), cond.group(4)
        if kind == "endif":
            if skipping:
                skipping.pop()
            return
        if kind == "ifeval":
            skipping.append(False)  # not evaluated: the content is kept
            return
        if "+" in names:
            defined = all(n.lower() in self.attributes for n in names.split("+"))
        else:
            defined = any(n.lower() in self.attributes for n in names.split(",") if n)
        keep = defined if kind == "ifdef" else not defined
        if content:  # the single-line form: ifdef::name[text]
            if keep and not any(skipping):
                out.append(content)
            return
        skipping.append(not keep)

    def _include(self, target: str, spec: str, path: str, depth: int) -> list[str]:
        if depth >= MAX_DEPTH or self._count >= MAX_INCLUDES:
            return []
        rel = resolve(subs_attributes(target, self.attributes), path, self.component)
        text = self.read(rel) if rel else None
        if rel is None or text is None:
            return []  # unresolved: dropped (Asciidoctor would show a warning line)
        self._count += 1
        self.includes.append(rel)
        text = text.replace("\r\n", "\n")
        options = _options(spec)
        selected = _lines(text.split("\n"), options.get("lines", ""))
        if "tag" in options or "tags" in options:
            selected = _tagged(selected, options.get("tags") or options.get("tag", ""))
        else:
            selected = [line for line in selected if not _TAG.search(line)]
        if rel.endswith((".adoc", ".asciidoc", ".asc", ".ad")):
            return self.lines("\n".join(selected), rel, depth + 1)
        return selected


def _options(spec: str) -> dict[str, str]:
    out = {}
    for part in re.split(r",(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", spec):
        name, eq, value = part.partition("=")
        if eq:
            out[name.strip()] = value.strip().strip('"')
    return out


def _lines(lines: list[str], spec: str) -> list[str]:
    """`lines=1..5;8;10..-1` (1-based, inclusive; -1 is the end)."""
    if not spec:
        return lines
    keep: list[str] = []
    for part in re.split(r"[;,]", spec):
        low, _, high = part.strip().partition("..")
        if not low.strip().lstrip("-").isdigit():
            continue
        start = int(low)
        end = len(lines) if high.strip() in ("", "-1") else int(high) if high.strip().isdigit() else start
        keep.extend(lines[start - 1: end])
    return keep


def _tagged(lines: list[str], spec: str) -> list[str]:
    """The lines a `tag=`/`tags=` selection keeps (`**` all, `*` all tagged, `!x` not x); the
    tag::/end:: marker lines themselves are always dropped."""
    wanted: dict[str, bool] = {}
    for name in re.split(r"[;,]", spec):
        name = name.strip()
        if name:
            wanted[name.lstrip("!")] = not name.startswith("!")
    only_negated = bool(wanted) and not any(wanted.values())
    untagged = wanted.pop("**", False) or only_negated
    any_tag = wanted.pop("*", False) or untagged
    keep, stack = [], []
    for line in lines:
        if marker := _TAG.search(line):
            kind, name = marker.groups()
            if kind == "tag":
                stack.append(name)
            elif name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name):]
            continue
        chosen = next((wanted[t] for t in reversed(stack) if t in wanted), any_tag if stack else untagged)
        if chosen:
            keep.append(line)
    return keep
