"""Docs links that unfurl (`link_shared` -> `chat.unfurl`): a pasted link to a docs page, on the
published site or in the repository, gets a card with what a reader needs to trust it: the
page's title and the linked section, its owners, its last change and commit, its review state
(a warning when it is overdue, deprecated or a draft) and its level.

Only pages at `public` unfurl, wherever the link is pasted: an unfurl travels with its message
when that is forwarded to another conversation, and a link still in the message composer
(`source: composer`) has no conversation yet, so no card may hold more than anyone in the
workspace may read, which is also never above any conversation's audience. A link to any other
page (above public, not indexed, or no docs page at all) is left to what Slack shows by itself:
docsbot sends nothing for it and says nothing about why. Nothing is logged of the links.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.blocks import escape, link
from rag import Engine, Level, Ownership, PageFacts, linked_page, page_facts, site_pages_of
from sync.report import short_commit

log = logging.getLogger(__name__)

UNFURL_LEVEL = Level.public  # what every unfurl may show (see the module's docstring)
MAX_LINKS = 10  # links unfurled per message


@dataclass
class Unfurler:
    engine: Engine
    review_days: int
    _site: tuple[str, dict[str, str]] = field(default=("", {}), init=False)  # (index commit, pages)

    async def unfurls(self, links: list[dict[str, Any]], now: datetime | None = None) -> dict[str, dict[str, Any]]:
        """The card of each link to a public docs page, by its URL as Slack sent it."""
        store = self.engine.store
        meta = await asyncio.to_thread(store.meta)
        pages = await self._site_pages(str(meta.get("commit") or ""))
        ownership = Ownership.from_meta(meta)
        when = now or datetime.now(timezone.utc)
        cards: dict[str, dict[str, Any]] = {}
        for url in dict.fromkeys(str(entry.get("url") or "") for entry in links[:MAX_LINKS]):
            linked = linked_page(url, self.engine.config.links, pages)
            if linked is None:
                continue
            facts = await page_facts(store, linked, UNFURL_LEVEL, ownership, self.review_days, when)
            if facts is not None:
                cards[url] = card(facts)
        return cards

    async def _site_pages(self, commit: str) -> dict[str, str]:
        """The published pages of the index, read again when the index changed."""
        if self._site[0] != commit or not commit:
            self._site = (commit, await asyncio.to_thread(site_pages_of, self.engine.store))
        return self._site[1]


def card(facts: PageFacts) -> dict[str, Any]:
    """The unfurl of a page: its title (and section) linked to the page, then one context line of
    owners, last change, review state and level, and the warning when there is one."""
    name = escape(f"{facts.title} › {facts.section}" if facts.section else facts.title)
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {
        "type": "mrkdwn", "text": f"*{link(facts.page_url or facts.commit_url, name)}*", "verbatim": True}}]
    bits = [f"Owner {escape(', '.join(facts.owners))}" if facts.owners else "No owner named"]
    if facts.commit_date or facts.commit:
        commit = link(facts.commit_url, f"`{escape(short_commit(facts.commit))}`") if facts.commit else ""
        bits.append(" ".join(part for part in (f"Last change {escape(facts.commit_date[:10])}"
                                               if facts.commit_date else "Last change", commit) if part))
    if facts.review is not None:
        reviewed = f" (reviewed {facts.review.since.date().isoformat()})" if facts.review.reviewed else ""
        bits.append(f"Review due {facts.review.due.date().isoformat()}{reviewed}")
    bits.append(f"Level {escape(facts.level)}")
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(bits), "verbatim": True}]})
    if facts.warning:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": escape(facts.warning)}]})
    return {"blocks": blocks}


async def unfurl(client: AsyncWebClient, unfurler: Unfurler, event: dict[str, Any]) -> None:
    """Answer a `link_shared` event: chat.unfurl with the cards of its links to public pages
    (the composer's by `unfurl_id` and `source`, a posted message's by `channel` and `ts`);
    no call when none is one."""
    cards = await unfurler.unfurls([x for x in event.get("links") or [] if isinstance(x, dict)])
    if not cards:
        return
    if event.get("source") == "composer" or event.get("channel") == "COMPOSER":
        if not event.get("unfurl_id"):
            return
        where: dict[str, Any] = {"unfurl_id": event["unfurl_id"], "source": "composer"}
    else:
        where = {"channel": event.get("channel"), "ts": event.get("message_ts")}
    try:
        await client.chat_unfurl(unfurls=cards, **where)
    except SlackApiError as exc:
        log.warning("chat.unfurl failed: %s", exc.response.get("error"))
