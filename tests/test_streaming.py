"""Streamed answers: with a model that streams, the answer grows in its thread through
chat.startStream / appendStream / stopStream, and the citation check still decides at the end."""
from __future__ import annotations

from pathlib import Path

from bot.local import demo
from bot.blocks import FEEDBACK_DOWN, FEEDBACK_UP, QUOTED_CONTEXT
from bot.deliveries import buttons
from bot.local.harness import local_slack
from bot.local.standin import visible_text
from foundation.wiring import llm_config
from foundation.settings import Settings
from rag.engine import Engine
from rag.generation import LLMChat
from rag.prompt import Source
from tests.support.settings import make_settings
from tests.support.slack import VPN, answers, chat_methods, mention, model_settings, streamed_text, with_model
from eval.standins.openai_server import OpenAIStandIn

LONG = "Connect through the VPN portal & sign in with your SSO account [1]. " * 12


async def test_a_streaming_model_streams_the_answer_then_attaches_sources_and_feedback(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: LONG
    settings = model_settings(settings, openai_standin)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        question, _ = await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        streamed = [m for m in chat_methods(local) if m.endswith("Stream")]
        assert streamed[0] == "chat.startStream" and streamed[-1] == "chat.stopStream"
        assert streamed.count("chat.appendStream") >= 1 and streamed.count("chat.startStream") == 1
        [start] = local.standin.calls_to("chat.startStream")
        assert start["thread_ts"] == question and start["recipient_user_id"] == demo.BOB
        assert start["recipient_team_id"] == local.standin.workspace.team_id
        [stop] = local.standin.calls_to("chat.stopStream", ok_only=True)
        assert "*Sources*" in visible_text({"blocks": stop["blocks"]})
        [answer] = answers(local, demo.GENERAL)  # the placeholder is gone, the stream is the answer
        assert answer["ts"] == stop["ts"] and answer["thread_ts"] == question and not answer["streaming"]
        text = visible_text(answer)
        assert "SSO account [1]" in text and "VPN Setup" in text and "&amp;" in text
        assert [b["action_id"] for b in buttons(answer)] == [FEEDBACK_UP, FEEDBACK_DOWN]
        assert await local.bot.services.answer_log.find_by_message(demo.GENERAL, answer["ts"]) is not None


async def test_a_reply_whose_citations_name_no_source_is_never_streamed(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: LONG.replace("[1]", "[99]")  # no such source
    settings = model_settings(settings, openai_standin)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        assert not [m for m in chat_methods(local) if m.endswith("Stream")]
        [answer] = answers(local, demo.GENERAL)
        text = visible_text(answer)
        # the docs' own words instead, marked (issue 54 item 3); the model's text is never shown
        assert QUOTED_CONTEXT in text and "[99]" not in text and "sign in with your SSO account" not in text


async def test_a_stream_shows_nothing_after_a_citation_that_names_no_source(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: LONG + "Then wire the money to the account below [99]. " + LONG
    settings = model_settings(settings, openai_standin)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        shown = streamed_text(local)
        assert "SSO account [1]" in shown and "wire the money" not in shown and shown.count("SSO account") <= 12
        [answer] = answers(local, demo.GENERAL)
        text = visible_text(answer)
        assert QUOTED_CONTEXT in text and "wire the money" not in text and not answer["streaming"]


async def test_with_streaming_turned_off_the_placeholder_is_updated(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: LONG
    settings = model_settings(settings, openai_standin, llm_stream=False)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        assert not [m for m in chat_methods(local) if m.endswith("Stream")]
        assert "stream" not in openai_standin.requests[-1][1]
        [answer] = answers(local, demo.GENERAL)
        assert "SSO account [1]" in visible_text(answer)


async def test_an_endpoint_that_once_answers_with_one_body_is_still_streamed_the_next_time(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    openai_standin.streams = False  # answers `"stream": true` with one JSON body
    openai_standin.reply = lambda messages: "Fine, no deploys on Friday [1]"
    chat = LLMChat(llm_config(make_settings(tmp_path, openai_base_url=openai_standin.base_url, llm_max_retries=0)))
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    sources = [Source(1, "Deploys", "Friday", "No deploys on Friday.")]
    assert await chat.generate("q", sources, [], sink) == "Fine, no deploys on Friday [1]"
    assert pieces == [] and len(openai_standin.requests) == 1  # the body is the answer: not asked twice
    openai_standin.streams = True
    assert await chat.generate("q", sources, [], sink) == "Fine, no deploys on Friday [1]"
    assert "".join(pieces) == "Fine, no deploys on Friday [1]" and len(pieces) > 1
    assert [body.get("stream") for _, body, _ in openai_standin.requests] == [True, True]
