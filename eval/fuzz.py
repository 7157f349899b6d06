"""`python -m eval fuzz`: property-based fuzzing (hypothesis) of everything that reads outside input.

Targets and their properties:
- documents: any bytes through the front-matter parser and the chunker raise nothing but a skip
  reason (DocumentError); every non-blank character of each section lands in some chunk, in
  order; chunk ids are unique and the same on a second run.
- access files: any text (TOML-like or not) loads as a policy or fails with AccessFileError.
- mrkdwn: doc text (answer, titles, sections, versions) rendered into an answer message carries no
  `<...>` construct except the citations' own http(s) links: no mention, broadcast or foreign link.
- Slack endpoint: random JSON, form and raw bodies, signed, unsigned, badly or stale signed, to the
  real aiohttp app: only 2xx/4xx, a 401 and no Web API call for every request not signed with the
  secret, and no ERROR log line from the HTTP layer.
- webhook: random bodies and signatures: a sync starts only for a valid signature; 2xx/4xx only.

The test suite runs each target with a few hundred examples (tests/test_fuzz.py); this command runs
thousands and prints how many inputs each target tried and how many failed.
"""
from __future__ import annotations

import argparse
import logging
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from bot.access import AccessFileError, load_access
from bot.blocks import answer_message
from foundation.settings import Settings
from eval.fuzz_http import fuzz_slack, fuzz_webhook
from eval.fuzzing import Outcome, run_property
from rag import AccessRules, Answer, Citation, Diagnostics, DocumentError, chunk_document, parse_document, sections


# -- documents ---------------------------------------------------------------------------------------
_LINES = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["---", "...", "# Title", "## Section", "## Section", "## ???", "# !", "### ", "#", "```", "~~~",
                     "```python", "| a | b |", "|---|---|", "- item", "1. step", "", "   ", "title: T", "access: team",
                     "access: [x]", "version: 2.3", "title: {a: 1}", ": :", "? x", "&a *a",
                     "!!python/object:os.system x"]),
    st.builds(lambda w, n: " ".join([w] * n), st.text(min_size=1, max_size=12), st.integers(1, 200)),
)
_DOC_TEXT = st.lists(_LINES, max_size=40).map("\n".join)
DOC_BYTES = st.one_of(
    st.binary(max_size=2000),
    _DOC_TEXT.map(str.encode),
    st.tuples(st.sampled_from([b"", b"\xef\xbb\xbf"]), _DOC_TEXT, st.sampled_from(["\n", "\r\n", "\r"])).map(
        lambda t: t[0] + t[1].replace("\n", t[2]).encode("utf-8", "surrogatepass")),
)
CHUNKING = st.integers(50, 1500).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1)))
_SPACE = re.compile(r"\s+")


def check_document(case: tuple[bytes, tuple[int, int]]) -> str:
    raw, (size, overlap) = case
    try:
        doc = parse_document("fuzz/doc.md", raw, AccessRules({}), 1_000_000)
    except DocumentError:
        return "skipped"
    chunks = chunk_document(doc, size, overlap)
    ids = [c.chunk_id for c in chunks]
    assert len(set(ids)) == len(ids), f"duplicate chunk ids {ids}"
    assert [c.chunk_id for c in chunk_document(doc, size, overlap)] == ids, "chunk ids changed on a second run"
    # Every non-blank character of every section, in order, is in the section's chunks (overlap
    # repeats some, which a subsequence allows).
    for section in sections(doc):
        wanted = _SPACE.sub("", "\n".join(block.text for block in section.blocks))
        got = _SPACE.sub("", "".join(c.text for c in chunks if c.anchor == section.anchor
                                     and c.section == " › ".join(section.headings)))
        assert _subsequence(wanted, got), f"section {section.anchor!r} lost text: {wanted[:200]!r}"
    return "parsed"


def _subsequence(wanted: str, text: str) -> bool:
    it = iter(text)
    return all(char in it for char in wanted)


def fuzz_documents(examples: int) -> Outcome:
    outcome = Outcome("documents")

    def check(case: tuple[bytes, tuple[int, int]]) -> None:
        kind = check_document(case)
        outcome.counts[kind] = outcome.counts.get(kind, 0) + 1

    return run_property(outcome, examples, st.tuples(DOC_BYTES, CHUNKING), check)


# -- access files ------------------------------------------------------------------------------------
_TOML_LINES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["[admins]", "admins = [\"U1\"]", "admins = \"U1\"", "admins = [1, 2]", "[defaults]",
                     "member = \"team\"", "public_channel = 3", "[users]", "U1 = \"restricted\"", "U2 = \"secret\"",
                     "U3 = 7", "U4 = [\"team\"]", "U5 = {a = 1}", "[groups]", "[domains]", "\"Acme.COM\" = \"team\"",
                     "[channels]", "C1 = \"public\"", "[[users]]", "[other]", "x = 1979-05-27", "y = true"]),
)
ACCESS_TEXT = st.one_of(st.lists(_TOML_LINES, max_size=20).map("\n".join), st.binary(max_size=300))


def fuzz_access_files(examples: int) -> Outcome:
    outcome = Outcome("access files")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "access.toml"

        def check(content: str | bytes) -> None:
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
            try:
                load_access(path)
                kind = "loaded"
            except AccessFileError:
                kind = "refused"
            outcome.counts[kind] = outcome.counts.get(kind, 0) + 1

        return run_property(outcome, examples, ACCESS_TEXT, check)


# -- mrkdwn --------------------------------------------------------------------------------------------
_HOSTILE = st.one_of(st.text(max_size=60), st.sampled_from(
    ["<!channel>", "<!here|here>", "<@U_ALICE>", "<#C123|general>", "<https://evil.example|click>", "<mailto:a@b>",
     "&lt;!channel&gt;", "<", ">", "|", "**bold**", "<<!everyone>>", "&", "<!subteam^S1>", "`<@U1>`"]))
DOC_STRINGS = st.lists(_HOSTILE, max_size=6).map("".join)
_URLS = st.one_of(st.just(""), st.builds(lambda path: f"https://git.example.com/docs/blob/abc/{path}", DOC_STRINGS))
CITATIONS = st.builds(
    Citation, n=st.integers(1, 12), doc_path=DOC_STRINGS, title=DOC_STRINGS, section=DOC_STRINGS,
    version=DOC_STRINGS, commit=DOC_STRINGS, commit_date=DOC_STRINGS, url=_URLS, score=st.just(0.5),
)
ANSWERS = st.builds(
    lambda text, answered, citations: Answer("q", text, answered, None if answered else "no_match", citations,
                                             Diagnostics(), "public"),
    DOC_STRINGS, st.booleans(), st.lists(CITATIONS, max_size=4),
)
_CONSTRUCT = re.compile(r"<([^>]*)>?")
_OUR_LINK = re.compile(r"https?://[^\s<>|]+\|[^<>]*")


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "text" and isinstance(item, str):
                yield item
            else:
                yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def check_mrkdwn(answer: Answer) -> None:
    for text in _texts(answer_message(answer, "A1")):
        for construct in _CONSTRUCT.findall(text):
            assert _OUR_LINK.fullmatch(construct), f"<{construct}> survives in {text!r}"


def fuzz_mrkdwn(examples: int) -> Outcome:
    return run_property(Outcome("mrkdwn"), examples, ANSWERS, check_mrkdwn)


# -- the command ---------------------------------------------------------------------------------------
def targets(examples: int, slack_examples: int, settings: Settings) -> list[Callable[[], Outcome]]:
    return [
        lambda: fuzz_documents(examples),
        lambda: fuzz_access_files(examples),
        lambda: fuzz_mrkdwn(examples),
        lambda: fuzz_slack(slack_examples, settings),
        lambda: fuzz_webhook(examples, settings),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per target (default 10,000)")
    parser.add_argument("--slack-examples", type=int, help="inputs for the Slack endpoint (default: --examples)")
    args = parser.parse_args((argv or [])[1:])
    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="docsbot-fuzz-") as data_dir:
        settings = Settings(_env_file=None, data_dir=data_dir)
        for target in targets(args.examples, args.slack_examples or args.examples, settings):
            outcomes.append(target())
            print(outcomes[-1].line(), flush=True)
    failures = sum(o.failures for o in outcomes)
    print(f"total: {sum(o.tried for o in outcomes):,} inputs, {failures} failures "
          f"in {time.perf_counter() - started:.0f}s")
    return 1 if failures else 0
