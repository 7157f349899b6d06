"""What real OpenAI-compatible servers send that the happy path does not, on the stand-in (the real
llama.cpp server's run is tests/test_llm_real.py, `make eval-llm`): usage in a last chunk or not
at all, a reply cut off at its most tokens, a parameter the endpoint refuses, a prompt over the
model's context window (refused with the window named, or, as llama.cpp's server does when it
streams, a stream without a single event), and an embeddings endpoint retried and counted as chat is."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from eval.standins.openai_server import Failure, OpenAIStandIn, RawReply, tokens
from foundation.wiring import llm_config, rag_config
from rag.check import check_answer
from rag.embeddings import EmbeddingError, OpenAIEmbedder
from rag.generation import LLMChat, ProviderError
from rag.prompt import Source
from tests.support.events import Recorded, recording
from tests.support.settings import make_settings

SOURCES = [Source(1, "Deploy Policy", "Deploy windows", "No deploys on Fridays.")]
# Six sources of 100 words each: over a window of 600 (the stand-in counts words as tokens).
LONG = [Source(n, f"Page {n}", "", " ".join(f"w{n}x{i}" for i in range(100))) for n in range(1, 7)]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    with recording() as recorder:
        yield recorder


def chat(standin: OpenAIStandIn, tmp_path: Path, **overrides: object) -> LLMChat:
    return LLMChat(llm_config(make_settings(tmp_path, openai_base_url=standin.base_url, **overrides)))


def sent(standin: OpenAIStandIn) -> list[dict]:
    return [body for path, body, _ in standin.requests if path == "/v1/chat/completions"]


async def collect(generator: LLMChat, sources: list[Source] = SOURCES) -> tuple[str, list[str]]:
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    return await generator.generate("Friday deploy?", sources, [], sink), pieces


async def test_streamed_usage_from_the_last_chunk_goes_to_the_metrics(
    openai_standin: OpenAIStandIn, tmp_path: Path, recorded: Recorded
) -> None:
    openai_standin.reply = lambda messages: "No deploys on Fridays [1]."
    text, pieces = await collect(chat(openai_standin, tmp_path))
    assert text == "".join(pieces) == "No deploys on Fridays [1]."
    [body] = sent(openai_standin)
    assert body["stream"] and body["stream_options"] == {"include_usage": True}
    prompt = sum(tokens(m["content"]) for m in body["messages"])
    assert recorded.tokens == [(prompt, 5)] and openai_standin.counted == []  # as reported: nothing counted


async def test_a_stream_without_usage_is_counted_by_the_endpoint_tokenizer(
    openai_standin: OpenAIStandIn, tmp_path: Path, recorded: Recorded
) -> None:
    """llama.cpp's server sends no usage when it streams, asked or not."""
    openai_standin.stream_usage = False
    openai_standin.reply = lambda messages: "No deploys on Fridays [1]."
    text, _ = await collect(chat(openai_standin, tmp_path))
    [(prompt, completion)] = recorded.tokens
    assert completion == 5 and prompt > 100 and "No deploys on Fridays [1]." in openai_standin.counted


async def test_a_reply_cut_off_at_its_most_tokens_keeps_its_whole_sentences(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    openai_standin.finish_reason = "length"
    openai_standin.reply = lambda messages: "No deploys on Fridays [1]. Nor on the weekend, when"
    generator = chat(openai_standin, tmp_path)
    assert (await collect(generator))[0] == "No deploys on Fridays [1]."
    assert await generator.generate("Friday deploy?", SOURCES, []) == "No deploys on Fridays [1]."
    openai_standin.reply = lambda messages: "Deploys on Fridays are not"
    with pytest.raises(ProviderError, match="cut off"):
        await generator.generate("Friday deploy?", SOURCES, [])


@pytest.mark.parametrize(("param", "message", "instead"), [
    ("seed", "Unsupported parameter: 'seed' is not supported with this model.", None),
    ("max_tokens", "Unsupported parameter: 'max_tokens' is not supported with this model. "
                   "Use 'max_completion_tokens' instead.", "max_completion_tokens"),
    ("stream_options", "Extra inputs are not permitted: 'stream_options'", None),
    ("stream_options", "Unrecognized request argument supplied: stream_options", None),  # Azure, no param
])
async def test_a_parameter_the_endpoint_refuses_is_left_out_from_then_on(
    openai_standin: OpenAIStandIn, tmp_path: Path, param: str, message: str, instead: str | None
) -> None:
    refusal = {"error": {"message": message, "type": "invalid_request_error",
                         "param": param if "Unrecognized" not in message else None,
                         "code": "unsupported_parameter" if param != "stream_options" else None}}
    openai_standin.failures = [Failure(400, body=refusal)]
    openai_standin.reply = lambda messages: "No deploys on Fridays [1]."
    generator = chat(openai_standin, tmp_path, llm_max_tokens=321)
    assert (await collect(generator))[0] == "No deploys on Fridays [1]."
    assert await generator.generate("Friday deploy?", SOURCES, []) == "No deploys on Fridays [1]."
    refused, *rest = sent(openai_standin)
    assert param in refused and len(rest) == 2
    assert all(param not in body for body in rest)
    if instead:
        assert all(body[instead] == 321 for body in rest)


async def test_a_client_error_that_names_no_optional_parameter_is_still_a_refusal(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    openai_standin.failures = [Failure(400, body={"error": {"message": "Unsupported value: 'messages[0].role'",
                                                            "param": "messages", "code": "unsupported_value"}})]
    with pytest.raises(ProviderError, match=r"refused the request \(HTTP 400\)"):
        await chat(openai_standin, tmp_path).generate("q", SOURCES, [])
    assert len(sent(openai_standin)) == 1


def sources_in(body: dict) -> int:
    return body["messages"][-1]["content"].count("<source ")


def prompt_of(body: dict) -> int:
    return sum(tokens(m["content"]) for m in body["messages"])


async def test_a_prompt_over_the_window_its_refusal_names_is_fitted_and_sent_again(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    openai_standin.context_tokens = 600
    openai_standin.reply = lambda messages: "See page one [1]."
    generator = chat(openai_standin, tmp_path, llm_max_tokens=100)
    assert await generator.generate("q", LONG, []) == "See page one [1]."
    refused, fitted = sent(openai_standin)
    assert sources_in(refused) == 6 and prompt_of(refused) > 600
    assert 0 < sources_in(fitted) < 6 and prompt_of(fitted) + fitted["max_tokens"] <= 600
    assert await generator.generate("q", LONG, []) == "See page one [1]."  # fitted before it is sent now
    assert sent(openai_standin)[2]["messages"] == fitted["messages"]


async def test_the_configured_window_fits_the_prompt_before_it_is_sent(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    openai_standin.context_tokens = 600
    openai_standin.stream_piece_chars = 3  # "[5" and "]" in separate chunks
    openai_standin.reply = lambda messages: "Page one says so [1]. Page five says so [1, 5]."
    generator = chat(openai_standin, tmp_path, llm_max_tokens=100, llm_context_tokens=600)
    text, pieces = await collect(generator, LONG)
    [body] = sent(openai_standin)
    assert prompt_of(body) + body["max_tokens"] <= 600 and sources_in(body) < 5
    # The model cites a source it was never given: the citation check rejects the answer, and
    # the stream never showed the citation either.
    assert text == "".join(pieces) == "Page one says so [1]. Page five says so [1, 0]."
    assert check_answer(text, len(LONG)).abstain_reason == "invalid_citations"


async def test_a_question_that_cannot_fit_is_never_sent(openai_standin: OpenAIStandIn, tmp_path: Path) -> None:
    generator = chat(openai_standin, tmp_path, llm_max_tokens=50, llm_context_tokens=150)
    with pytest.raises(ProviderError, match="does not fit the model's context window of 150 tokens"):
        await generator.generate("q", LONG, [])
    assert sent(openai_standin) == []


async def test_an_empty_event_stream_is_asked_again_unstreamed_to_learn_the_window(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    """llama.cpp's server answers a streamed prompt over its window with 200 and no event; the same
    request unstreamed is refused with the window named."""
    openai_standin.context_tokens = 600
    openai_standin.failures = [RawReply(b"", "text/event-stream")]
    openai_standin.reply = lambda messages: "See page one [1]."
    text, pieces = await collect(chat(openai_standin, tmp_path, llm_max_tokens=100), LONG)
    empty, refused, fitted = sent(openai_standin)
    assert empty["stream"] and "stream" not in refused and fitted["stream"]
    assert sources_in(refused) == 6 and 0 < sources_in(fitted) < 6
    assert text == "".join(pieces) == "See page one [1]."


def embedder(standin: OpenAIStandIn, tmp_path: Path, **overrides: object) -> OpenAIEmbedder:
    config = rag_config(make_settings(tmp_path, openai_base_url=standin.base_url, embedding_provider="openai",
                                      embedding_model="text-embedding-3-small", **overrides))
    return OpenAIEmbedder(config.embedding, config.llm)


def test_embeddings_are_retried_classified_and_counted_as_chat_is(
    openai_standin: OpenAIStandIn, tmp_path: Path, recorded: Recorded
) -> None:
    openai_standin.failures = [Failure(429, {"Retry-After": "0"}), Failure(503, {"Retry-After": "0"})]
    vectors = embedder(openai_standin, tmp_path).embed(["deploy on friday", "vpn"])
    assert vectors.shape == (2, 384) and np.allclose(vectors[0], openai_standin.vector("deploy on friday"))
    assert (recorded.embedding_attempts, recorded.embedding_failures, recorded.embedding_retries) == (
        3, ["429", "5xx"], ["429", "5xx"])

    openai_standin.failures = [Failure(400)]
    with pytest.raises(EmbeddingError, match=r"failed \(HTTP 400\)"):
        embedder(openai_standin, tmp_path).embed(["x"])
    assert recorded.embedding_attempts == 4  # a refusal is not retried

    openai_standin.failures = [Failure(503, {"Retry-After": "0"})] * 3
    with pytest.raises(EmbeddingError, match=r"unavailable \(HTTP 503\)"):
        embedder(openai_standin, tmp_path, llm_max_retries=2).embed(["x"])
    assert recorded.embedding_attempts == 7 and recorded.embedding_retries[2:] == ["5xx", "5xx"]
    assert recorded.attempts == 0  # none of it is chat's


def test_an_embeddings_reply_that_is_not_one_is_an_embedding_error(
    openai_standin: OpenAIStandIn, tmp_path: Path, recorded: Recorded
) -> None:
    openai_standin.failures = [RawReply(json.dumps({"object": "list", "data": []}).encode())]
    with pytest.raises(EmbeddingError, match="malformed reply"):
        embedder(openai_standin, tmp_path).embed(["x"])
    assert recorded.embedding_failures == ["other"]
