"""Requests to the bot made the way Slack makes them: events, slash commands and interactions,
signed with the signing secret (`v0=HMAC_SHA256(secret, "v0:{ts}:{raw body}")`).

Used by the local console, the tests and the ack benchmark, with `bot.local.standin` playing the Web API.
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp


def signature(secret: str, timestamp: str, body: str) -> str:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return f"v0={digest}"


@dataclass
class Delivered:
    status: int
    body: str
    seconds: float  # until the response (Slack's "ack") arrived


class SlackDeliveries:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        secret: str,
        team_id: str,
        bot_user_id: str,
        response_url: Any = None,
    ) -> None:
        """`url` is the bot's /slack/events; `response_url(key)` makes a command's response URL."""
        self.session = session
        self.url = url
        self.secret = secret
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.response_url = response_url or (lambda key: f"http://127.0.0.1:9/respond/{key}")
        self._ids = itertools.count(1)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{int(time.time())}{next(self._ids):05d}"

    async def post(
        self, body: str, content_type: str, *, timestamp: str | None = None, secret: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Delivered:
        timestamp = timestamp or str(int(time.time()))
        all_headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature(secret or self.secret, timestamp, body),
            **(headers or {}),
        }
        started = time.perf_counter()
        async with self.session.post(self.url, data=body.encode(), headers=all_headers) as response:
            text = await response.text()
        return Delivered(response.status, text, time.perf_counter() - started)

    # -- Events API -------------------------------------------------------------------------------
    def event_body(self, event: dict[str, Any], event_id: str | None = None) -> str:
        return json.dumps({
            "token": "unused", "team_id": self.team_id, "api_app_id": "A_DOCSBOT", "type": "event_callback",
            "event": event, "event_id": event_id or self.new_id("Ev"), "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": self.bot_user_id, "is_bot": True,
                                "is_enterprise_install": False}],
            "is_ext_shared_channel": False,
        })

    async def event(self, event: dict[str, Any], event_id: str | None = None, retry: int = 0) -> Delivered:
        headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else None
        return await self.post(self.event_body(event, event_id), "application/json", headers=headers)

    async def context_changed(self, user: str, channel: str | None) -> Delivered:
        """`user` looks at `channel` (None: nothing) while docsbot's agent view is open, as Slack's
        reference shows `app_context_changed`: the person in the envelope's authorizations."""
        entities = [{"type": "slack#/types/channel_id", "value": channel, "team_id": self.team_id}]
        body = json.dumps({
            "token": "unused", "team_id": self.team_id, "api_app_id": "A_DOCSBOT", "type": "event_callback",
            "event": {"type": "app_context_changed", "context": {"entities": entities} if channel else {}},
            "event_id": self.new_id("Ev"), "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": user, "is_bot": False,
                                "is_enterprise_install": False}],
        })
        return await self.post(body, "application/json")

    def mention(self, user: str, channel: str, text: str, ts: str, thread_ts: str | None = None) -> dict[str, Any]:
        event = {"type": "app_mention", "user": user, "text": f"<@{self.bot_user_id}> {text}", "ts": ts,
                 "team": self.team_id, "channel": channel, "event_ts": ts}
        return event | ({"thread_ts": thread_ts} if thread_ts else {})

    def direct_message(self, user: str, channel: str, text: str, ts: str) -> dict[str, Any]:
        return {"type": "message", "channel_type": "im", "user": user, "text": text, "ts": ts,
                "channel": channel, "event_ts": ts}

    def thread_message(self, user: str, channel: str, text: str, ts: str, thread_ts: str,
                       channel_type: str = "channel") -> dict[str, Any]:
        """A person's reply in a thread of a channel (`message.channels`; "group": `message.groups`)."""
        return {"type": "message", "channel_type": channel_type, "user": user, "text": text, "ts": ts,
                "thread_ts": thread_ts, "parent_user_id": user, "team": self.team_id, "channel": channel,
                "event_ts": ts}

    # -- slash commands and interactions ----------------------------------------------------------
    def command_body(self, user: str, channel: str, text: str, command: str = "/docs") -> str:
        return urlencode({
            "token": "unused", "team_id": self.team_id, "channel_id": channel, "user_id": user,
            "command": command, "text": text, "api_app_id": "A_DOCSBOT", "is_enterprise_install": "false",
            "response_url": self.response_url(self.new_id("cmd")), "trigger_id": self.new_id("trigger."),
        })

    async def command(self, user: str, channel: str, text: str) -> Delivered:
        return await self.post(self.command_body(user, channel, text), "application/x-www-form-urlencoded")

    async def interaction(self, payload: dict[str, Any]) -> Delivered:
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post(body, "application/x-www-form-urlencoded")

    async def click(self, user: str, channel: str, button: dict[str, Any], message: dict[str, Any]) -> Delivered:
        """Press a button of a message (`block_actions`)."""
        return await self.interaction({
            "type": "block_actions", "user": {"id": user}, "api_app_id": "A_DOCSBOT", "token": "unused",
            "team": {"id": self.team_id}, "channel": {"id": channel}, "trigger_id": self.new_id("trigger."),
            "container": {"type": "message", "message_ts": message.get("ts", ""), "channel_id": channel},
            "message": message, "response_url": self.response_url(self.new_id("act")),
            "actions": [{"type": button.get("type", "button"), "action_id": button["action_id"],
                         "block_id": button.get("block_id", ""),
                         "value": button.get("value", ""), "action_ts": str(time.time())}],
        })

    async def message_shortcut(self, user: str, channel: str, callback_id: str, message: dict[str, Any]) -> Delivered:
        """Use a message shortcut on `message` (`message_action`)."""
        return await self.interaction({
            "type": "message_action", "callback_id": callback_id, "user": {"id": user}, "api_app_id": "A_DOCSBOT",
            "token": "unused", "team": {"id": self.team_id}, "channel": {"id": channel},
            "trigger_id": self.new_id("trigger."), "message_ts": message.get("ts", ""), "message": message,
            "response_url": self.response_url(self.new_id("act")),
        })

    async def submit_view(self, user: str, view: dict[str, Any], values: dict[str, dict[str, Any]]) -> Delivered:
        """Submit a modal: `values` is Slack's view.state.values."""
        return await self.interaction({
            "type": "view_submission", "user": {"id": user}, "api_app_id": "A_DOCSBOT", "token": "unused",
            "team": {"id": self.team_id}, "trigger_id": self.new_id("trigger."),
            "view": view | {"id": "V_FORM", "state": {"values": values}},
        })


def feedback_choices(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Slack's native feedback buttons of a message as clickable choices: 👍 then 👎."""
    return [{"type": element["type"], "action_id": element["action_id"], "block_id": block.get("block_id", ""),
             "value": element[side]["value"]}
            for block in message.get("blocks") or [] if block.get("type") == "context_actions"
            for element in block.get("elements", []) if element.get("type") == "feedback_buttons"
            for side in ("positive_button", "negative_button")]


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The buttons of a message, each with its block_id."""
    return [element | {"block_id": block.get("block_id", "")}
            for block in message.get("blocks") or [] if block.get("type") == "actions"
            for element in block.get("elements", []) if element.get("type") == "button"]
