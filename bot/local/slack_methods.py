"""The Slack workspace the local stand-in keeps, and the Web API methods it answers on it.

`Workspace` holds the users, user groups and channels with their members; `SlackMethods` adds the
messages, the assistant threads and the Home tabs, what people do there (post, open a DM) and one
handler per Web API method (`_chat_postMessage` for chat.postMessage), each answering the way
Slack does where it matters to the bot: a bot that is not in a channel gets `not_in_channel` /
`channel_not_found`, Block Kit limits are enforced (`blocks_error`: `invalid_blocks`,
`msg_blocks_too_long`) and members are paged. The HTTP side (auth, recorded calls, injected failures,
rate limits) is bot/local/standin.py.
"""
from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_MESSAGE_CHARS = 13_000
MAX_UPDATE_TEXT = 4000


@dataclass
class Workspace:
    team_id: str = "T_DEMO"
    enterprise_id: str = ""  # an Enterprise Grid's (E…) when the workspace is one of its workspaces
    bot_user_id: str = "U_DOCSBOT"
    bot_id: str = "B_DOCSBOT"
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    usergroups: dict[str, list[str]] = field(default_factory=dict)
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)  # each with "members"
    free_plan: bool = False  # usergroups.* fail with plan_upgrade_required

    def add_user(self, user_id: str, name: str, email: str = "", **flags: Any) -> None:
        """A member of this workspace as users.info describes one (on a Grid, with its
        `enterprise_user`); `flags` override any field (`team_id` of another organisation's person)."""
        grid = {"enterprise_user": {"id": user_id, "enterprise_id": self.enterprise_id, "is_admin": False,
                                    "is_owner": False, "teams": [self.team_id]}} if self.enterprise_id else {}
        self.users[user_id] = {"id": user_id, "name": name, "team_id": self.team_id, "deleted": False,
                               "is_bot": False, "is_restricted": False, "is_ultra_restricted": False,
                               "profile": {"email": email, "real_name": name}} | grid | flags

    def add_channel(self, channel_id: str, name: str, members: list[str], **flags: Any) -> None:
        self.channels[channel_id] = {"id": channel_id, "name": name, "is_channel": True, "is_private": False,
                                     "is_im": False, "is_mpim": False, "is_shared": False,
                                     "is_ext_shared": False, "is_org_shared": False,
                                     "members": list(members)} | flags


class SlackMethods:
    """The workspace's conversations and the Web API methods on them, by name (`_` + the method
    with `_` for `.`): each takes the call's arguments and returns Slack's JSON answer."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.messages: dict[str, list[dict[str, Any]]] = {cid: [] for cid in workspace.channels}
        self.assistant_threads: dict[tuple[str, str], dict[str, Any]] = {}  # status, prompts, title
        self.home_tabs: dict[str, dict[str, Any]] = {}  # the Home tab published for each user
        # chat.unfurl's cards, by (channel, ts) of a posted message or ("composer", unfurl_id)
        self.unfurls: dict[tuple[str, str], dict[str, Any]] = {}
        self.manifests: dict[str, dict[str, Any]] = {}  # each installed app's manifest, by app id
        self._ts = itertools.count(1)

    # -- what people do (not through the API) ------------------------------------------------------
    def next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def post_as_user(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> str:
        """A person posts a message; returns its ts (the bot then gets an event for it)."""
        ts = self.next_ts()
        message = {"type": "message", "user": user, "text": text, "ts": ts}
        if thread_ts:
            message["thread_ts"] = thread_ts
        self.messages.setdefault(channel, []).append(message)
        return ts

    def dm_channel(self, user: str) -> str:
        for cid, channel in self.workspace.channels.items():
            if channel.get("is_im") and channel.get("user") == user:
                return cid
        cid = f"D_{user}"
        self.workspace.add_channel(cid, "", [user, self.workspace.bot_user_id], is_im=True, is_channel=False,
                                   is_private=True, user=user)
        self.messages[cid] = []
        return cid

    # -- methods -----------------------------------------------------------------------------------------
    def _auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        ws = self.workspace
        return {"ok": True, "url": "https://demo.slack.invalid/", "team": "Demo", "user": "docsbot",
                "team_id": ws.team_id, "user_id": ws.bot_user_id, "bot_id": ws.bot_id, "is_enterprise_install": False,
                **({"enterprise_id": ws.enterprise_id} if ws.enterprise_id else {})}

    def _postable(self, channel: str) -> str | None:
        info = self.workspace.channels.get(channel)
        if info is None:
            return "channel_not_found"
        if self.workspace.bot_user_id not in info["members"]:
            return "channel_not_found" if info["is_private"] else "not_in_channel"
        return None

    def _chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = p["channel"]
        if error := self._postable(channel) or blocks_error(p):
            return {"ok": False, "error": error}
        message = {"type": "message", "user": self.workspace.bot_user_id, "bot_id": self.workspace.bot_id,
                   "text": p.get("text", ""), "blocks": p.get("blocks", []), "ts": self.next_ts()}
        if p.get("thread_ts"):
            message["thread_ts"] = p["thread_ts"]
        self.messages[channel].append(message)
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}

    def _chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        if error := self._postable(p["channel"]) or blocks_error(p):
            return {"ok": False, "error": error}
        if len(p.get("text", "")) > MAX_UPDATE_TEXT:
            return {"ok": False, "error": "msg_too_long"}
        message = self._message(p["channel"], p["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.get("bot_id") != self.workspace.bot_id:
            return {"ok": False, "error": "cant_update_message"}
        message.update(text=p.get("text", ""), blocks=p.get("blocks", []), edited=True)
        return {"ok": True, "channel": p["channel"], "ts": p["ts"], "text": message["text"]}

    def _chat_delete(self, p: dict[str, Any]) -> dict[str, Any]:
        if error := self._postable(p["channel"]):
            return {"ok": False, "error": error}
        message = self._message(p["channel"], p["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.get("bot_id") != self.workspace.bot_id:
            return {"ok": False, "error": "cant_delete_message"}
        self.messages[p["channel"]].remove(message)
        return {"ok": True, "channel": p["channel"], "ts": p["ts"]}

    def _message(self, channel: str, ts: str) -> dict[str, Any] | None:
        return next((m for m in self.messages.get(channel, []) if m["ts"] == ts), None)

    # Streaming (chat.startStream / appendStream / stopStream): a reply in a thread whose text
    # grows; `streaming` is True until it stops. Text arrives as `markdown_text` or as chunks.
    def _chat_startStream(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = p["channel"]
        if error := self._postable(channel):
            return {"ok": False, "error": error}
        if not p.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments", "detail": "thread_ts is required"}
        if not self.workspace.channels[channel].get("is_im") and not p.get("recipient_user_id"):
            return {"ok": False, "error": "missing_recipient_user_id"}
        message = {"type": "message", "user": self.workspace.bot_user_id, "bot_id": self.workspace.bot_id,
                   "text": _stream_text(p), "blocks": [], "ts": self.next_ts(), "thread_ts": p["thread_ts"],
                   "streaming": True}
        self.messages[channel].append(message)
        return {"ok": True, "channel": channel, "ts": message["ts"]}

    def _chat_appendStream(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._message(p["channel"], p["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if not message.get("streaming"):
            return {"ok": False, "error": "message_not_in_streaming_state"}
        message["text"] += _stream_text(p)
        return {"ok": True, "channel": p["channel"], "ts": p["ts"]}

    def _chat_stopStream(self, p: dict[str, Any]) -> dict[str, Any]:
        appended = self._chat_appendStream(p)
        if not appended["ok"]:
            return appended
        if error := blocks_error(p):
            return {"ok": False, "error": error}
        message = self._message(p["channel"], p["ts"])
        assert message is not None
        message.update(streaming=False, blocks=p.get("blocks") or [])
        return {"ok": True, "channel": p["channel"], "ts": p["ts"], "message": message}

    # The assistant panel: what the bot set on each thread, by (channel, thread_ts); the agent
    # view's DM takes suggested prompts for the DM itself, without a thread (thread_ts "").
    def _assistant_threads_setStatus(self, p: dict[str, Any]) -> dict[str, Any]:
        return self._assistant_thread(p, "status", p.get("status", ""))

    def _assistant_threads_setSuggestedPrompts(self, p: dict[str, Any]) -> dict[str, Any]:
        prompts = p["prompts"] if isinstance(p["prompts"], list) else json.loads(p["prompts"])
        if not 1 <= len(prompts) <= 4 or not all(pr.get("title") and pr.get("message") for pr in prompts):
            return {"ok": False, "error": "invalid_arguments"}
        return self._assistant_thread(p, "prompts", prompts, thread_optional=True)

    def _assistant_threads_setTitle(self, p: dict[str, Any]) -> dict[str, Any]:
        return self._assistant_thread(p, "title", p["title"])

    def _assistant_thread(self, p: dict[str, Any], key: str, value: Any, thread_optional: bool = False
                          ) -> dict[str, Any]:
        channel = self.workspace.channels.get(p["channel_id"])
        if channel is None or not channel.get("is_im") or not (p.get("thread_ts") or thread_optional):
            return {"ok": False, "error": "channel_not_found" if channel is None else "invalid_arguments"}
        self.assistant_threads.setdefault((p["channel_id"], p.get("thread_ts") or ""), {})[key] = value
        return {"ok": True}

    def _chat_unfurl(self, p: dict[str, Any]) -> dict[str, Any]:
        """Cards for the links of a posted message (`channel` and `ts`: each URL must be in it) or
        of one still in the composer (`unfurl_id` and `source`)."""
        unfurls = p.get("unfurls")
        unfurls = json.loads(unfurls) if isinstance(unfurls, str) else unfurls
        if not isinstance(unfurls, dict) or not unfurls:
            return {"ok": False, "error": "invalid_arguments"}
        if any(blocks_error({"blocks": u.get("blocks") or []}) for u in unfurls.values()):
            return {"ok": False, "error": "invalid_blocks"}
        if p.get("unfurl_id") and p.get("source") == "composer":
            self.unfurls[("composer", p["unfurl_id"])] = unfurls
            return {"ok": True}
        if not p.get("channel") or not p.get("ts"):
            return {"ok": False, "error": "invalid_arguments"}
        message = self._message(p["channel"], p["ts"])
        if message is None:
            return {"ok": False, "error": "cannot_find_channel" if p["channel"] not in self.messages
                    else "cannot_unfurl_message"}
        if any(url not in message["text"] for url in unfurls):
            return {"ok": False, "error": "cannot_unfurl_url"}
        self.unfurls[(p["channel"], p["ts"])] = unfurls
        return {"ok": True}

    def _apps_manifest_export(self, p: dict[str, Any]) -> dict[str, Any]:
        manifest = self.manifests.get(p.get("app_id", ""))
        return {"ok": True, "manifest": manifest} if manifest is not None else {"ok": False, "error": "app_not_found"}

    def _views_publish(self, p: dict[str, Any]) -> dict[str, Any]:
        view = p["view"] if isinstance(p["view"], dict) else json.loads(p["view"])
        if p["user_id"] not in self.workspace.users:
            return {"ok": False, "error": "user_not_found"}
        if view.get("type") != "home" or len(view.get("blocks", [])) > 100:
            return {"ok": False, "error": "invalid_arguments"}
        self.home_tabs[p["user_id"]] = view
        return {"ok": True, "view": view | {"id": f"VH{p['user_id']}"}}

    def _chat_postEphemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        if error := self._postable(p["channel"]) or blocks_error(p):
            return {"ok": False, "error": error}
        if p["user"] not in self.workspace.channels[p["channel"]]["members"]:
            return {"ok": False, "error": "user_not_in_channel"}
        return {"ok": True, "message_ts": self.next_ts()}

    def _conversations_info(self, p: dict[str, Any]) -> dict[str, Any]:
        info = self.workspace.channels.get(p["channel"])
        if info is None or (info["is_private"] and self.workspace.bot_user_id not in info["members"]):
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": {k: v for k, v in info.items() if k != "members"}}

    def _conversations_members(self, p: dict[str, Any]) -> dict[str, Any]:
        info = self.workspace.channels.get(p["channel"])
        if info is None:
            return {"ok": False, "error": "channel_not_found"}
        start = int(p.get("cursor") or 0)
        limit = int(p.get("limit") or 100)
        page = info["members"][start:start + limit]
        more = start + limit < len(info["members"])
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        if p["channel"] not in self.messages:
            return {"ok": False, "error": "channel_not_found"}
        thread = [m for m in self.messages[p["channel"]] if p["ts"] in (m["ts"], m.get("thread_ts"))]
        if not thread:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": sorted(thread, key=lambda m: float(m["ts"])), "has_more": False}

    def _conversations_open(self, p: dict[str, Any]) -> dict[str, Any]:
        user = p["users"]
        if user not in self.workspace.users:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "channel": {"id": self.dm_channel(user)}}

    def _users_info(self, p: dict[str, Any]) -> dict[str, Any]:
        """`locale` only with `include_locale`, as Slack does: a user's own, else "en-US"."""
        user = self.workspace.users.get(p["user"])
        if not user:
            return {"ok": False, "error": "user_not_found"}
        described = {k: v for k, v in user.items() if k != "locale"}
        if str(p.get("include_locale", "")).lower() in ("1", "true"):
            described["locale"] = user.get("locale") or "en-US"
        return {"ok": True, "user": described}

    def _users_lookupByEmail(self, p: dict[str, Any]) -> dict[str, Any]:
        """Slack matches the address case-insensitively; no user has it: `users_not_found`."""
        email = p["email"].strip().lower()
        for user in self.workspace.users.values():
            if (user.get("profile") or {}).get("email", "").lower() == email and email:
                return {"ok": True, "user": user}
        return {"ok": False, "error": "users_not_found"}

    def _usergroups_users_list(self, p: dict[str, Any]) -> dict[str, Any]:
        if self.workspace.free_plan:
            return {"ok": False, "error": "plan_upgrade_required"}
        users = self.workspace.usergroups.get(p["usergroup"])
        return {"ok": True, "users": users} if users is not None else {"ok": False, "error": "no_such_subteam"}

    def _reactions_add(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True} if self._postable(p["channel"]) is None else {"ok": False, "error": "not_in_channel"}

    def _chat_getPermalink(self, p: dict[str, Any]) -> dict[str, Any]:
        """Slack's link to a message: the workspace's domain, the channel, `p` and the ts without its dot."""
        if p["channel"] not in self.messages:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": p["channel"], "permalink":
                f"https://{self.workspace.team_id.lower()}.slack.com/archives/{p['channel']}/p"
                f"{str(p['message_ts']).replace('.', '')}"}

    def _views_open(self, p: dict[str, Any]) -> dict[str, Any]:
        view = p["view"] if isinstance(p["view"], dict) else json.loads(p["view"])
        if not p.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        if len(view.get("blocks", [])) > 100:
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "view": view | {"id": f"V{self.next_ts().replace('.', '')}"}}


def _stream_text(p: dict[str, Any]) -> str:
    """The text a stream call adds: `markdown_text` and/or markdown_text chunks."""
    chunks = p.get("chunks") or []
    return (p.get("markdown_text") or "") + "".join(
        c.get("text", "") for c in chunks if c.get("type") == "markdown_text")


TASK_STATUSES = {"pending", "in_progress", "complete", "error"}


def _plan_ok(block: dict[str, Any]) -> bool:
    """Block Kit's `plan`: a plain-text `title`, and `tasks` of `task_card`s, each with its
    `task_id`, `title` and a `status` of TASK_STATUSES (slack_sdk's PlanBlock / TaskCardBlock)."""
    tasks = block.get("tasks") or []
    return isinstance(block.get("title"), str) and bool(block["title"]) and all(
        t.get("type") == "task_card" and isinstance(t.get("task_id"), str) and isinstance(t.get("title"), str)
        and t.get("status") in TASK_STATUSES for t in tasks)


def blocks_error(p: dict[str, Any]) -> str | None:
    """Slack's Block Kit limits: the error Slack would answer, or None."""
    message_blocks = p.get("blocks") or []
    if len(message_blocks) > MAX_BLOCKS:
        return "invalid_blocks"
    for block in message_blocks:
        if block.get("type") == "section" and len(block.get("text", {}).get("text", "")) > MAX_SECTION_TEXT:
            return "invalid_blocks"
        if block.get("type") == "plan" and not _plan_ok(block):
            return "invalid_blocks"
    if len(json.dumps(message_blocks)) + len(p.get("text", "")) > MAX_MESSAGE_CHARS:
        return "msg_blocks_too_long"
    return None
