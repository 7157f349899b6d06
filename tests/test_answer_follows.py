"""The fact, not the sentence next to it (issue 37): what answers a question often follows the
sentence that matches it. A matched sentence is quoted with the next one of its paragraph, a
how-to told in prose with the code block that shows it, "is there a way to ..." asks for steps,
a how-to below the answerability gate is answered only by a quote that shows what to do
(tests/test_answer_kinds.py, beside the value questions). The texts are written for these tests."""
from __future__ import annotations


import pytest

from rag.generation import ExtractiveAnswerer
from rag.kinds import lacks_kind, question_kind
from rag.prompt import Source

BATCHING = [Source(1, "Batch link", "Batch link › Setting a maximum URL length", (
    "When batched calls are sent as one GET request, the URL can grow too long and the server answers "
    "414 URI Too Long. The `maxURLLength` option splits a batch into several requests below that length."),
    0.6, "links/batch.md", 1)]

STREAMING = [Source(1, "Quickstart", "Quickstart › Streaming responses", (
    "For large downloads you may want streaming responses, which do not load the whole body into memory.\n\n"
    "You can stream the bytes of the response...\n\n"
    "```python\nwith client.stream(\"GET\", url) as response:\n    for data in response.iter_bytes():\n"
    "        save(data)\n```"), 0.6, "quickstart.md", 1)]


def answer(question: str, sources: list[Source]) -> str:
    return ExtractiveAnswerer().answer(question, sources, [])


def test_the_sentence_after_the_match_is_quoted_with_it() -> None:
    text = answer("our batched GET calls fail with 414 URI Too Long, how do I stop batches getting that big?",
                  BATCHING)
    assert "maxURLLength" in text


def test_a_how_to_told_in_prose_is_quoted_with_the_code_that_shows_it() -> None:
    text = answer("how can I download a large file without loading the whole body into memory?", STREAMING)
    assert "iter_bytes" in text and text.count("```") == 2


@pytest.mark.parametrize(("question", "kind"), [
    ("is there a way to run a function on every request?", "steps"),
    ("what's the way to call procedures from server code?", "steps"),
    ("what time window should we report our SLOs over?", None),
    ("what time zone are the on-call hours in?", None),
    ("what time is the handover?", "time"),
])
def test_question_kind_wording(question: str, kind: str | None) -> None:
    assert question_kind(question) == kind


@pytest.mark.parametrize(("text", "lacks"), [
    ("Run `/incident declare` in Slack.", False),
    ("1. Create a new key in the dashboard.", False),
    ("```bash\nvault kv patch secret/x key=y\n```", False),
    ("Incidents are handled by the on-call engineer.", True),
])
def test_a_how_to_answer_shows_what_to_do(text: str, lacks: bool) -> None:
    assert lacks_kind("steps", text) is lacks

