"""With an LLM endpoint the prompt's sources are the spans the extractive answerer would quote
(issue 23): a real question through the engine over the indexed sample docs, to the local
OpenAI-compatible stand-in, and what the stand-in received."""
from __future__ import annotations

import re

from foundation.wiring import llm_config
from rag.engine import Engine
from rag.generation import LLMChat
from rag.levels import Level
from rag.prompt import Source
from rag.sourcing import span_sources
from rag.spans import fences_balanced
from eval.standins.openai_server import OpenAIStandIn
from tests.test_extractive_spans import in_order
from tests.support.settings import make_settings

_SOURCE = re.compile(r'<source n="(\d+)" title="([^"]*)">\n(.*?)\n</source>', re.S)


async def prompted(engine: Engine, standin: OpenAIStandIn, tmp_path, question: str, level: Level,
                   reply: str = "See the runbook [1].") -> tuple[list[tuple[int, str, str]], object]:
    """The sources (n, title, text) of the prompt the stand-in got for `question`, and the answer."""
    engine.generator = LLMChat(llm_config(make_settings(tmp_path, openai_base_url=standin.base_url)))
    standin.reply = lambda messages: reply
    answer = await engine.ask(question, level)
    chats = [body for path, body, _ in standin.requests if path.endswith("/chat/completions")]
    assert chats, (answer.abstain_reason, answer.detail)
    user = chats[-1]["messages"][-1]["content"]
    return [(int(n), title, text) for n, title, text in _SOURCE.findall(user)], answer


async def test_the_prompt_gets_the_whole_rollback_procedure_in_order_with_balanced_fences(
        sample_engine: Engine, openai_standin: OpenAIStandIn, tmp_path):
    sources, answer = await prompted(sample_engine, openai_standin, tmp_path,
                                     "how do I roll back tidepool-api?",
                                     Level.team)
    assert [n for n, _, _ in sources] == list(range(1, len(sources) + 1))
    assert all(fences_balanced(text) for _, _, text in sources), sources
    prompt = "\n".join(text for _, _, text in sources)
    # Step 1 (pause Argo CD) before Step 2 (Helm), and the Helm block whole: history, then rollback.
    assert in_order(prompt, "argocd app set tidepool-api-prod --sync-policy none",
                    "helm history tidepool-api", "helm rollback tidepool-api 41"), prompt
    assert in_order(prompt, "Step 1", "Step 2", "Step 3"), prompt
    # The citation check works on the spans: [1] is a source that was given, cited by its chunk.
    assert answer.answered and answer.citations[0].n == 1  # type: ignore[attr-defined]
    assert answer.citations[0].title == sources[0][1].split(" › ")[0]  # type: ignore[attr-defined]


async def test_the_prompt_gives_a_rule_with_the_exception_that_qualifies_it(
        sample_engine: Engine, openai_standin: OpenAIStandIn, tmp_path):
    sources, _ = await prompted(sample_engine, openai_standin, tmp_path,
                                "can I deploy a hotfix during the december freeze?", Level.team)
    prompt = "\n".join(text for _, _, text in sources)
    assert "December 20 to January 3" in prompt
    rule = next(n for n, _, text in sources if "December 20 to January 3" in text)
    qualifier = next(n for n, title, text in sources if "written approval from the VP of Engineering" in text)
    assert "Exceptions" in dict((n, t) for n, t, _ in sources)[qualifier]
    assert qualifier == rule + 1  # right after the rule it qualifies


async def test_a_citation_beyond_the_spans_is_still_rejected(sample_engine: Engine, openai_standin: OpenAIStandIn,
                                                            tmp_path):
    sources, answer = await prompted(sample_engine, openai_standin, tmp_path,
                                     "how do I roll back tidepool-api?", Level.team, reply="Roll back [99].")
    assert sources and answer.fallback == "invalid_citations"  # type: ignore[attr-defined]
    assert "[99]" not in answer.answer  # type: ignore[attr-defined]


def procedure(steps: int) -> str:
    return "How to restore the cache:\n\n" + "\n".join(
        f"{n}. Run this on every node:\n\n   ```bash\n   restore-cache --step {n} --node \"$NODE\" --verbose\n   ```\n"
        for n in range(1, steps + 1))


def test_a_section_without_a_span_keeps_its_chunk_and_each_span_its_citation():
    sources = [Source(1, "Glossary", "Terms", "Unrelated words only.", 0.4, "g.md", 1),
               Source(2, "Runbook", "Restore", procedure(7), 0.6, "r.md", 1)]
    spans = span_sources("how do I restore the cache?", sources, [], 10_000)
    assert [(s.n, s.title, i) for s, i in spans] == [(1, "Glossary", 0), (2, "Runbook", 1)]
    assert spans[0][0].text == "Unrelated words only."
    assert in_order(spans[1][0].text, *(f"--step {n} " for n in range(1, 8))) and "… (" not in spans[1][0].text


def test_a_procedure_too_long_for_its_budget_is_cut_at_a_step_and_says_which_are_left():
    [(span, _)] = span_sources("how do I restore the cache?", [Source(1, "Runbook", "Restore", procedure(40),
                                                                     0.6, "r.md", 1)], [], 10_000)
    assert fences_balanced(span.text) and "--step 1 " in span.text
    left = re.search(r"… \(steps (\d+)–40 in the doc\)", span.text)
    assert left and f"--step {int(left.group(1)) - 1} " in span.text and f"--step {left.group(1)} " not in span.text


def test_a_procedure_over_step_sections_that_overruns_the_prompt_budget_ends_saying_so():
    steps = [Source(n, "Cache restore", f"Step {n}: part {n}",
                    f"Do part {n} of the work on every node:\n\n```bash\nrestore-cache --part {n} {'-v ' * 100}\n```",
                    0.6, "cache.md", n) for n in (1, 2, 3)]
    spans = span_sources("how do I restore the cache?", steps, [], 900)
    assert [(s.n, s.section, i) for s, i in spans] == [(1, "Step 1: part 1", 0), (2, "Step 2: part 2", 1)]
    assert spans[-1][0].text.endswith("… (more in the doc)") and all(fences_balanced(s.text) for s, _ in spans)
