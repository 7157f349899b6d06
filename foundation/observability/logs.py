"""Logging: one line per event, readable text by default or JSON (`DOCSBOT_LOG_FORMAT=json`).

Every line written while a question is being answered carries its `answer_id` (a contextvar, so
it follows the question into the tasks it starts), which also names the answer in the answer log
and on its feedback buttons. Question and document text appear only with
`DOCSBOT_LOG_QUESTIONS=true`; configured secrets are masked in every line as a last defence.
"""
from __future__ import annotations

import contextvars
import json
import logging
import sys
import uuid
from datetime import datetime, timezone
from typing import Any

from pydantic import SecretStr

_answer_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("docsbot_answer_id", default=None)
_log_questions = False

# Lines of libraries that say nothing an operator can act on.
_NOISE = ("`token` will be unused",)
# LogRecord attributes that are not `extra=` fields.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "answer_id"}


def new_answer_id() -> str:
    """Start a question: a fresh id, carried by every log line of the current task from now on."""
    answer_id = uuid.uuid4().hex[:16]
    _answer_id.set(answer_id)
    return answer_id


def current_answer_id() -> str | None:
    return _answer_id.get()


def question_text(text: str) -> str:
    """The text itself with DOCSBOT_LOG_QUESTIONS=true; otherwise only its length."""
    return text if _log_questions else f"<{len(text)} chars>"


class _Context(logging.Filter):
    """Adds answer_id and drops library noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "answer_id", None):  # or given as extra={"answer_id": ...}
            record.answer_id = _answer_id.get()
        return not any(noise in str(record.msg) for noise in _NOISE)


class _Masking(logging.Formatter):
    """Masks the configured secrets in the finished line, tracebacks and extra fields included."""

    def __init__(self, inner: logging.Formatter, secrets: list[str]) -> None:
        super().__init__()
        self.inner = inner
        self.secrets = [s for s in secrets if len(s) >= 4]

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record)
        for secret in self.secrets:
            line = line.replace(secret, "***")
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if answer_id := getattr(record, "answer_id", None):
            line["answer_id"] = answer_id
        line.update({k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra = {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}
        if answer_id := getattr(record, "answer_id", None):
            extra = {"answer_id": answer_id, **extra}
        return text + "".join(f" {k}={v}" for k, v in extra.items()) if extra else text


def setup_logging(level: str = "INFO", fmt: str = "text", log_questions: bool = False,
                  secrets: list[SecretStr | None] | None = None, force: bool = False) -> None:
    """Configure the root logger for the process (the `docsbot` command calls it first). Like
    logging.basicConfig, it leaves a root logger that already has handlers alone (a host process
    or a test runner configured logging) unless `force` is given."""
    global _log_questions
    _log_questions = log_questions
    root = logging.getLogger()
    if root.handlers and not force:
        return
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter() if fmt == "json" else TextFormatter()
    handler.setFormatter(_Masking(formatter, [s.get_secret_value() for s in secrets or [] if s is not None]))
    handler.addFilter(_Context())
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Libraries stay at WARNING whatever our level: their INFO/DEBUG lines are per-request chatter.
    for name in ("slack_bolt", "slack_sdk", "aiohttp.access", "httpx", "httpx2", "httpcore", "openai", "apscheduler",
                 "urllib3", "alembic", "watchfiles", "botocore", "moto", "aiosqlite", "sqlalchemy", "psycopg"):
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
