"""The bot's hooks into metrics, logs and traces (foundation.observability), kept out of the
answering and listener code, which only call these one-liners."""
from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from foundation.observability import metrics
from foundation.observability.logs import current_answer_id, new_answer_id, question_text
from foundation.observability.tracing import span
from rag import Answer

log = logging.getLogger("docsbot.questions")

_MODEL_WORDS = {"declined", "invalid_citations"}  # abstentions whose detail is the model's reply
_received: contextvars.ContextVar[float | None] = contextvars.ContextVar("docsbot_received", default=None)


@contextmanager
def slack_request(kind: str) -> Iterator[None]:
    """Around Bolt's dispatch of one Slack request: its arrival time and the `slack.event` span,
    both inherited by the tasks a listener starts (so a question's spans share one trace)."""
    token = _received.set(time.perf_counter())
    try:
        with span("slack.event", **{"slack.type": kind}):
            yield
    finally:
        _received.reset(token)


def request_kind(body: Any) -> str:
    """The event type, `command` or the interaction type of a parsed request body (bounded)."""
    if not isinstance(body, dict):
        return "unknown"
    if "command" in body:
        return "command"
    event = body.get("event")
    return str(event.get("type", "event")) if isinstance(event, dict) else str(body.get("type", "unknown"))[:40]


def since_request() -> float | None:
    """Seconds since the Slack request that started the current task arrived, if any."""
    received = _received.get()
    return time.perf_counter() - received if received is not None else None


def question_started(surface: str, user: str, channel: str, text: str) -> str:
    """A new answer id for the current task, and the line that starts its story in the log."""
    answer_id = new_answer_id()
    log.info("question", extra={"surface": surface, "user": user, "channel": channel,
                                "question": question_text(text)})
    return answer_id


def answer_id() -> str:
    """The id of the question being answered in this task (a new one outside a question)."""
    return current_answer_id() or new_answer_id()


def answered(surface: str, answer: Answer, message_ts: str) -> None:
    """The answer (or abstention) is posted as `message_ts` ("" when only the asker sees it):
    count it with its stage timings, and log what retrieval and generation did."""
    diag = answer.diagnostics
    metrics.observe_answer(surface, answer.answered, answer.abstain_reason, diag.timings_ms)
    said = "answered" if answer.answered else "abstained"
    if answer.fallback:  # the model's answer could not be used: why, never its text (rag/engine.py)
        said += f" (the docs quoted instead: {answer.fallback})"
    log.info(said, extra={
        "surface": surface, "reason": answer.abstain_reason or "", "detail": _detail(answer),
        "message_ts": message_ts, "candidates": diag.candidates, "passed_threshold": diag.passed_threshold,
        "best_similarity": diag.best_similarity, "blocked": diag.blocked,
        "cited": [c.doc_path for c in answer.citations], "timings_ms": diag.timings_ms})


def _detail(answer: Answer) -> str:
    """The technical reason of an abstention; the model's own words count as doc text."""
    generated = answer.abstain_reason in _MODEL_WORDS
    return question_text(answer.detail) if generated else answer.detail


def failed(surface: str, reason: str, answer_id: str | None = None) -> None:
    """The question got no answer; `answer_id` when called outside the question's own task."""
    metrics.observe_failure(surface, reason)
    log.warning("question failed", extra={"surface": surface, "reason": reason, "answer_id": answer_id})


def waited_in_line(seconds: float) -> None:
    metrics.QUEUE_WAIT_SECONDS.observe(seconds)


def rejected_busy(surface: str) -> None:
    metrics.REJECTED_BUSY.inc()
    failed(surface, "busy")


def voted(vote: str, source: str, answer_id: str) -> None:
    metrics.FEEDBACK_VOTES.labels(vote, source).inc()
    log.info("feedback", extra={"vote": vote, "source": source, "on_answer": answer_id})


@contextmanager
def posting() -> Iterator[None]:
    """Around the Web API call that makes an answer visible: the `post` stage and its span."""
    started = time.perf_counter()
    with span("slack.post"):
        yield
    metrics.STAGE_SECONDS.labels("post").observe(time.perf_counter() - started)


class ObservedWebClient(AsyncWebClient):
    """The Web API client, counting failed calls by method and error, and reusing one aiohttp
    session (opened on the first call, on the running loop) instead of one per call."""

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:  # type: ignore[override]
        if self.session is None:
            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))
        try:
            return await super().api_call(api_method, **kwargs)
        except SlackApiError as exc:
            error = exc.response.get("error") if isinstance(exc.response.data, dict) else None
            metrics.SLACK_API_ERRORS.labels(api_method, str(error or f"http_{exc.response.status_code}")[:60]).inc()
            raise
        except (aiohttp.ClientError, TimeoutError):
            metrics.SLACK_API_ERRORS.labels(api_method, "connection_error").inc()
            raise



async def close_client(client: AsyncWebClient) -> None:
    """Close the Web API client's shared session (at shutdown)."""
    if client.session is not None and not client.session.closed:
        await client.session.close()
