"""Try the bot without Slack: type messages as someone in a channel and read the bot's replies.

The same listeners and Web API calls as in Slack: each line becomes a signed request to the
bot's HTTP app, and the bot's calls are served (and shown here) by the local Slack stand-in,
populated with the demo workspace of `bot.local.demo`.
"""
from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.local import demo
from bot.deliveries import buttons
from bot.local.harness import LocalSlack, local_slack
from bot.services import SyncCommand
from bot.local.standin import visible_text
from foundation.settings import Settings
from rag import Engine
from state.db import StateDB

HELP = """Type as if in Slack:
  @docsbot QUESTION     mention the bot (in a thread after :thread)
  /docs QUESTION        the slash command (/docs help, /docs status, /docs sync, /docs alone)
  TEXT                  a message (answered in a DM; in a channel the bot needs a mention)
  :user NAME            speak as alice, bob, dan, eve or guest       :users     who is who
  :channel NAME         go to general, eng, sre, partners, random, dm :channels  what is where
  :thread / :top        reply in the thread of the last question / back to the channel
  :click N              press button N                                :quit      leave
  :agent                open docsbot's agent view (your DM) looking at this channel
  :home                 open the Home tab          :assistant  open the assistant panel (then type questions)
  :react NAME           react to the bot's last message here (-1: a 👎 vote, +1: a 👍)"""


@dataclass
class Console:
    local: LocalSlack
    user: str = demo.BOB
    channel: str = demo.GENERAL
    thread_ts: str | None = None
    last_root: str | None = None
    seen_calls: int = 0
    panel: str | None = None  # the assistant panel's thread, while typing in it
    buttons: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    read: Callable[[str], str] = input  # how a form's fields are read (the terminal; a script in tests)

    # -- names -------------------------------------------------------------------------------------
    def user_name(self, user_id: str) -> str:
        return self.local.standin.workspace.users.get(user_id, {}).get("name", user_id)

    def channel_name(self, channel_id: str) -> str:
        info = self.local.standin.workspace.channels.get(channel_id, {})
        if info.get("is_im"):
            return f"DM with {self.user_name(info.get('user', ''))}"
        return f"#{info.get('name', channel_id)}"

    def prompt(self) -> str:
        """Where the person typing is; a DM is theirs with the bot, so it is named by the bot."""
        ws = self.local.standin.workspace
        is_dm = ws.channels.get(self.channel, {}).get("is_im")
        where = f"DM with {self.user_name(ws.bot_user_id)}" if is_dm else self.channel_name(self.channel)
        return f"[{self.user_name(self.user)} in {where}{' (thread)' if self.thread_ts else ''}]> "

    def find(self, kind: str, name: str) -> str | None:
        ws = self.local.standin.workspace
        if kind == "user":
            table = {u["name"]: uid for uid, u in ws.users.items() if not u["is_bot"]}
        elif name == "dm":
            return self.local.standin.dm_channel(self.user)
        else:
            table = {c["name"]: cid for cid, c in ws.channels.items() if not c["is_im"]}
        name = name.lstrip("#@").lower()
        return table.get(name) or next((v for v in table.values() if v.lower() == name), None)

    # -- input -------------------------------------------------------------------------------------
    async def handle(self, line: str) -> bool:
        """One line typed; False to leave."""
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word in (":quit", ":q", ":exit"):
            return False
        if word == ":help":
            print(HELP)
        elif word == ":users":
            for user in self.local.standin.workspace.users.values():
                if not user["is_bot"]:
                    level = await self.local.bot.services.answerer.directory.user_level(user["id"])
                    print(f"  {user['name']:<6} {user['id']:<8} {level.name if level is not None else 'bot'}"
                          + ("  (guest)" if user["is_restricted"] else ""))
        elif word == ":channels":
            for cid, info in self.local.standin.workspace.channels.items():
                if not info["is_im"]:
                    audience = await self.local.bot.services.answerer.directory.audience(cid)
                    invited = self.local.standin.workspace.bot_user_id in info["members"]
                    inside = "" if invited else "  (bot not invited)"
                    print(f"  #{info['name']:<9} {audience.level.name:<10} {audience.reason}{inside}")
        elif word in (":user", ":channel"):
            found = self.find(word[1:], rest)
            if found is None:
                print(f"no such {word[1:]}: {rest!r} (try {':users' if word == ':user' else ':channels'})")
            elif word == ":user":
                self.become(found)
            else:
                self.channel, self.thread_ts, self.panel = found, None, None
        elif word == ":thread":
            self.thread_ts = self.last_root
            print("now replying in the thread" if self.thread_ts else "no question to follow up on yet")
        elif word == ":top":
            self.thread_ts = None
        elif word == ":click":
            await self.click(rest)
        elif word == ":home":
            await self.open_home()
        elif word == ":assistant":
            await self.open_panel()
        elif word == ":agent":
            await self.open_agent()
        elif word == ":react":
            await self.react(rest)
        elif line.startswith("/docs"):
            await self.slash(line.removeprefix("/docs").strip())
        elif line.startswith(":"):
            print("unknown command; :help lists them")
        else:
            await self.say(line)
        return True

    async def say(self, text: str) -> None:
        local, ws = self.local, self.local.standin.workspace
        mention = re.match(r"@docsbot\b", text, re.I)
        slack_text = re.sub(r"^@docsbot\b", f"<@{ws.bot_user_id}>", text, flags=re.I)
        ts = local.standin.post_as_user(self.channel, self.user, slack_text, self.thread_ts)
        self.last_root = self.thread_ts or ts
        info = ws.channels[self.channel]
        if self.panel is not None and self.thread_ts == self.panel:
            event = {"type": "message", "user": self.user, "text": text, "ts": ts, "thread_ts": self.panel,
                     "parent_user_id": ws.bot_user_id, "channel": self.channel, "channel_type": "im",
                     "assistant_thread": {"action_token": local.slack.new_id("A")}, "event_ts": ts}
        elif mention and not info["is_im"]:
            event = local.slack.mention(self.user, self.channel, text[mention.end():].strip(), ts, self.thread_ts)
        elif info["is_im"]:
            event = local.slack.direct_message(self.user, self.channel, slack_text, ts)
            if self.thread_ts:
                event["thread_ts"] = self.thread_ts
        elif self.thread_ts:  # Slack sends a thread reply as message.channels (message.groups when private)
            kind = "group" if info.get("is_private") else "channel"
            event = local.slack.thread_message(self.user, self.channel, slack_text, ts, self.thread_ts, kind)
        else:
            print("(docsbot answers a channel message that mentions it, and follow-ups in its threads "
                  "(:thread): start with @docsbot)")
            return
        await self.deliver(local.slack.event(event))

    def become(self, user: str) -> None:
        """Speak as `user`; in a DM, from then on in that person's own DM with the bot (a DM is
        one person's: staying in another's would read as seeing their conversation)."""
        self.user = user
        if self.local.standin.workspace.channels[self.channel]["is_im"]:
            self.channel, self.thread_ts, self.panel = self.local.standin.dm_channel(user), None, None
            print(f"(now in {self.user_name(user)}'s own DM with docsbot)")

    async def open_home(self) -> None:
        """The Home tab, as `app_home_opened` opens it in Slack."""
        standin = self.local.standin
        event = {"type": "app_home_opened", "user": self.user, "channel": standin.dm_channel(self.user),
                 "tab": "home", "event_ts": standin.next_ts()}
        await self.deliver(self.local.slack.event(event))
        home = standin.home_tabs.get(self.user)
        if home is not None:
            print(f"\n[Home tab of {self.user_name(self.user)}]\n"
                  + indent(readable(visible_text(home), self.user_name)))

    async def open_panel(self) -> None:
        """A new assistant thread in the person's DM, opened while looking at the current channel;
        what is typed next goes to it (`:top` or `:channel` leaves it)."""
        standin = self.local.standin
        dm, root = standin.dm_channel(self.user), standin.next_ts()
        viewing = dm if standin.workspace.channels[self.channel]["is_im"] else self.channel
        event = {"type": "assistant_thread_started", "event_ts": standin.next_ts(), "assistant_thread": {
            "user_id": self.user, "channel_id": dm, "thread_ts": root,
            "context": {"channel_id": viewing, "team_id": standin.workspace.team_id, "enterprise_id": None}}}
        self.channel, self.thread_ts, self.panel = dm, root, root
        print(f"(the assistant panel, opened from {self.channel_name(viewing)}: type a question)")
        await self.deliver(self.local.slack.event(event))
        for n, prompt in enumerate(standin.assistant_threads.get((dm, root), {}).get("prompts", []), 1):
            print(f"  suggested {n}: {prompt['message']}")

    async def open_agent(self) -> None:
        """docsbot's agent view: the person's DM opens (`app_home_opened`, `tab: messages`) while they
        look at the current channel (`app_context_changed`); what is typed next is asked there."""
        standin = self.local.standin
        dm = standin.dm_channel(self.user)
        viewing = None if standin.workspace.channels[self.channel]["is_im"] else self.channel
        await self.deliver(self.local.slack.context_changed(self.user, viewing))
        await self.deliver(self.local.slack.event({"type": "app_home_opened", "user": self.user, "channel": dm,
                                                   "tab": "messages", "event_ts": standin.next_ts()}))
        looking = f"looking at {self.channel_name(viewing)}" if viewing else "looking at nothing"
        self.channel, self.thread_ts, self.panel = dm, None, None
        print(f"(docsbot's agent view, {looking}: answers are for that channel; type a question)")
        for n, prompt in enumerate(standin.assistant_threads.get((dm, ""), {}).get("prompts", []), 1):
            print(f"  suggested {n}: {prompt['message']}")

    async def react(self, name: str) -> None:
        """A reaction on the bot's last message in this channel (or thread), as Slack delivers it."""
        standin = self.local.standin
        name = {"+1": "+1", "-1": "-1", "👍": "+1", "👎": "-1"}.get(name, name.strip(":")) or "-1"
        mine = [m for m in standin.messages.get(self.channel, []) if m.get("bot_id")
                and (self.thread_ts is None or m.get("thread_ts") == self.thread_ts)]
        if not mine:
            print("no message of docsbot's here to react to")
            return
        event = {"type": "reaction_added", "user": self.user, "reaction": name,
                 "item_user": standin.workspace.bot_user_id, "event_ts": standin.next_ts(),
                 "item": {"type": "message", "channel": self.channel, "ts": mine[-1]["ts"]}}
        print(f"({self.user_name(self.user)} reacted :{name}: to docsbot's last message)")
        await self.deliver(self.local.slack.event(event))

    async def slash(self, text: str) -> None:
        if self.thread_ts:
            print("(Slack does not run slash commands in threads: sent to the channel)")
        self.last_root = None
        await self.deliver(self.local.slack.command(self.user, self.channel, text))

    async def click(self, number: str) -> None:
        if not number.isdigit() or not 1 <= int(number) <= len(self.buttons):
            print(f"no button {number!r}")
            return
        channel, button, message = self.buttons[int(number) - 1]
        await self.deliver(self.local.slack.click(self.user, channel, button, message))

    async def deliver(self, request: Any) -> None:
        delivered = await request
        if delivered.status != 200:
            print(f"(Slack would show an error: HTTP {delivered.status} {delivered.body})")
        await self.local.settle()
        await self.show_new_calls()

    # -- output ------------------------------------------------------------------------------------
    async def show_new_calls(self) -> None:
        calls = self.local.standin.calls[self.seen_calls:]
        self.seen_calls += len(calls)
        for call in calls:
            if not call.ok:
                continue
            p = call.params
            if call.method in ("chat.postMessage", "chat.update"):
                edited = " (edited)" if call.method == "chat.update" else ""
                thread = " in thread" if p.get("thread_ts") else ""
                self.show(f"docsbot → {self.channel_name(p['channel'])}{thread}{edited}", p, p["channel"], p.get("ts"))
            elif call.method == "chat.postEphemeral":
                self.show(f"docsbot → only {self.user_name(p['user'])} sees this", p, p["channel"], None)
            elif call.method == "response_url":
                self.show("docsbot → only you see this", p, self.channel, None)
            elif call.method == "views.open":
                await self.fill_form(p["view"])

    def show(self, header: str, message: dict[str, Any], channel: str, ts: str | None) -> None:
        text = visible_text(message)
        for button in buttons(message):
            self.buttons.append((channel, button, message | {"ts": ts or ""}))
            text = text.replace(f"[{button['text']['text']}]", f"[{len(self.buttons)}: {button['text']['text']}]", 1)
        print(f"\n{header}\n" + indent(readable(text, self.user_name)) + "\n")

    async def fill_form(self, view: dict[str, Any]) -> None:
        """Any modal the bot opens (the question form, the 👎 form): each input block is asked
        for in turn and sent back as Slack's `view.state.values`; leaving a required one empty
        cancels the form, as closing it in Slack does."""
        print(f"\n[form: {view['title']['text']}]")
        values: dict[str, dict[str, Any]] = {}
        for block in view.get("blocks", []):
            if block.get("type") != "input":
                continue
            element, optional = block["element"], block.get("optional", False)
            state = await self.fill_input(block["label"]["text"], element, optional)
            if state is None and not optional:
                print("  (form closed)")
                return
            values[block["block_id"]] = {element["action_id"]: state or {"type": element["type"], "value": None}}
        await self.deliver(self.local.slack.submit_view(self.user, view, values))

    async def fill_input(self, label: str, element: dict[str, Any], optional: bool) -> dict[str, Any] | None:
        """One input of a form as Slack's state of it, or None when left empty."""
        hint = "optional" if optional else "empty closes the form"
        options = element.get("options", [])
        if element["type"] == "radio_buttons":
            for n, option in enumerate(options, 1):
                print(f"  {n}. {option['text']['text']}")
            choice = (await asyncio.to_thread(self.read, f"  {label} (number; {hint}): ")).strip()
            if not (choice.isdigit() and 1 <= int(choice) <= len(options)):
                return None
            return {"type": "radio_buttons", "selected_option": options[int(choice) - 1]}
        text = (await asyncio.to_thread(self.read, f"  {label} ({hint}): ")).strip()
        return {"type": element["type"], "value": text} if text else None


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def readable(mrkdwn: str, user_name: Any) -> str:
    """Slack mrkdwn as a terminal shows it: links as `label (url)`, mentions as @name."""
    text = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r"\2 (\1)", mrkdwn)
    text = re.sub(r"<@([A-Z0-9_]+)(?:\|[^>]*)?>", lambda m: "@" + user_name(m.group(1)), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


# One person trying every surface asks faster than a colleague in Slack: the console's own
# per-person limit, unless DOCSBOT_BOT_USER_QUESTIONS_PER_MINUTE says otherwise.
CONSOLE_QUESTIONS_PER_MINUTE = 60


async def run_console(settings: Settings, engine: Engine, run_sync: SyncCommand, state: StateDB) -> None:
    if "bot_user_questions_per_minute" not in settings.model_fields_set:
        settings = settings.model_copy(update={"bot_user_questions_per_minute": CONSOLE_QUESTIONS_PER_MINUTE})
    if not settings.log_level:  # the chat shows what went wrong; an operator's WARNING lines would clutter it
        logging.getLogger("docsbot.questions").setLevel(logging.ERROR)
    async with local_slack(settings, engine, run_sync=run_sync, state=state) as local:
        console = Console(local)
        print("A local Slack workspace with docsbot (no real Slack involved). :help lists commands.")
        print(HELP)
        while True:
            try:
                line = (await asyncio.to_thread(input, console.prompt())).strip()
            except EOFError:
                print()
                return
            if line and not await console.handle(line):
                return
