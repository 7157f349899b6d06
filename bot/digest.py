"""The docs-gaps report sent to the people who can fix the docs: the weekly DM to each owner,
`/docs gaps [area]` for admins and owners, and the gap metrics.

Each reader gets the report at their own level and in the words they may read (insights/gaps.py), so
nobody learns a question asked above it, nor anyone else's private question; the digest quotes
a public-channel question only once SEVERAL people asked it (state/gaps.py). With several
replicas each runs the weekly job; a claim in the state store keyed on the person and the ISO
week (`digest:<user>:<year>-W<week>`, kept 8 days) lets exactly one send
each DM. A claim that cannot be made sends nothing: a missing digest beats a double one. The
schedule is DOCSBOT_DIGEST_CRON read in UTC: Slack's Web API has no workspace time zone.
"""
from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from slack_sdk.web.async_client import AsyncWebClient

from bot import gaps_text
from insights.gaps import DAY_MS, GapFinder
from bot.notes import Notes, in_dm
from bot.recipients import Recipients
from bot.services import Services
from foundation.observability import metrics
from foundation.wiring import gaps_config
from rag import Level
from state.db import StateUnavailable
from state.gaps import SEVERAL, Reader

log = logging.getLogger(__name__)

WINDOW_DAYS = 7
CLAIM_TTL_S = 8 * 86_400.0  # past the week, so a late replica cannot claim the same week again
METRICS_EVERY_S = 3600.0
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
NOT_YOURS = ("Only the admins in the access file and the docs owners see the docs gaps, and nothing "
             "in them is assigned to you.")


def finder(services: Services) -> GapFinder:
    return GapFinder(services.answer_log.db, services.engine, gaps_config(services.settings))


def _window(now: datetime) -> tuple[int, int]:
    until = int(now.timestamp() * 1000)
    return until - WINDOW_DAYS * DAY_MS, until


def claim_key(user: str, now: datetime) -> str:
    year, week, _ = now.astimezone(timezone.utc).isocalendar()
    return f"digest:{user}:{year}-W{week:02d}"


async def send_digests(services: Services, client: AsyncWebClient, now: datetime) -> list[str]:
    """The weekly job: a DM to each owner with something in their report; returns who got one."""
    since, until = _window(now)
    gaps = finder(services)
    directory = services.answerer.directory
    everything = await gaps.report(Level.restricted, since, until, Reader())  # only to learn who owns something
    people = await Recipients(client, directory).by_person(everything.owners())
    sent = []
    for user, names in sorted(people.items()):
        level = await directory.user_level(user)
        if level is None:  # a bot or an app
            continue
        mine = (await gaps.report(level, since, until, Reader(user, SEVERAL))).owned_by(names)
        if mine.empty:
            continue
        try:
            if not await services.dedupe.claim(claim_key(user, now), CLAIM_TTL_S):
                continue  # another replica sends this one
        except StateUnavailable as exc:
            log.warning("no docs digest for %s this time: %s", user, exc)
            continue
        await in_dm(client, user).reply(gaps_text.message(mine, f"Docs gaps for {', '.join(sorted(names))}"))
        sent.append(user)
    log.info("docs digest sent to %d owner(s)", len(sent))
    return sent


async def gaps_command(services: Services, client: AsyncWebClient, user: str, area: str, notes: Notes,
                       now: datetime | None = None) -> None:
    """`/docs gaps [area]`: the last week's report at the person's level, whole for an admin, what
    is assigned to them for an owner."""
    level = await services.answerer.directory.user_level(user) or Level.public
    since, until = _window(now or datetime.now(timezone.utc))
    try:
        report = await finder(services).report(level, since, until, Reader(user))
    except StateUnavailable as exc:
        log.warning("/docs gaps unavailable: %s", exc)
        await notes.tell("I couldn't read the answer log just now, please try again.")
        return
    title = "Docs gaps"
    if not services.policy.is_admin(user):
        names = (await Recipients(client, services.answerer.directory).by_person(report.owners())).get(user)
        if not names:
            await notes.tell(NOT_YOURS)
            return
        report, title = report.owned_by(names), f"Docs gaps for {', '.join(sorted(names))}"
    if area:
        report, title = report.in_area(area), f"{title} in {area}"
    await notes.reply(gaps_text.message(report, title))


async def home_summary(services: Services, client: AsyncWebClient, user: str) -> list[dict[str, Any]]:
    """For the App Home of an owner listed in the access file's [owners] (an owner known only by
    e-mail is not looked up on every Home visit): what of the last week's report is theirs."""
    directory = services.answerer.directory
    listed = [slack_id for ids in services.policy.owners.values() for slack_id in ids]
    if user not in listed and not [g for g in listed if g.startswith("S") and user in await directory.group_members(g)]:
        return []
    level = await directory.user_level(user) or Level.public
    since, until = _window(datetime.now(timezone.utc))
    try:
        report = await finder(services).report(level, since, until, Reader(user))
    except StateUnavailable as exc:
        log.warning("the Home tab shows no docs gaps: %s", exc)
        return []
    names = (await Recipients(client, directory).by_person(report.owners())).get(user)
    return [gaps_text.summary(report.owned_by(names), names)] if names else []


async def refresh_metrics(services: Services, now: datetime) -> None:
    """docsbot_unanswered_ratio{area} over the last week and docsbot_docs_overdue_total."""
    since, until = _window(now)
    gaps = finder(services)
    try:
        report = await gaps.report(Level.restricted, since, until, Reader())
    except StateUnavailable as exc:
        log.warning("gap metrics not refreshed: %s", exc)
        return
    metrics.observe_gaps(report.to_json()["unanswered_ratio"], await gaps.overdue_total(until))


def cron_trigger(expression: str) -> CronTrigger:
    """A 5-field cron expression in UTC, weekdays numbered as cron numbers them (0 and 7: Sunday;
    APScheduler's own numbers start at Monday)."""
    minute, hour, day, month, weekday = expression.split()
    weekday = re.sub(r"(?<![/\d])[0-7](?!\d)", lambda m: WEEKDAYS[int(m.group())], weekday)
    return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=weekday, timezone=timezone.utc)


@asynccontextmanager
async def scheduled(services: Services, client: AsyncWebClient,
                    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> AsyncIterator[None]:
    """While the body runs: the weekly digest on DOCSBOT_DIGEST_CRON (none when empty) and the
    gap metrics at once and then hourly. Each run is background work (`services.work`), so a
    shutdown drains it like an answer."""
    cron = gaps_config(services.settings).digest_cron
    scheduler = AsyncIOScheduler(timezone=timezone.utc)

    async def digest() -> None:  # a coroutine: APScheduler runs it on this loop (a plain function: in a thread)
        services.work.spawn(send_digests(services, client, clock()), name="docs-digest")

    async def gauges() -> None:
        services.work.spawn(refresh_metrics(services, clock()), name="gap-metrics")

    if cron:
        scheduler.add_job(digest, cron_trigger(cron), id="docs-digest", max_instances=1, coalesce=True)
    scheduler.add_job(gauges, IntervalTrigger(seconds=METRICS_EVERY_S), id="gap-metrics", max_instances=1,
                      coalesce=True, next_run_time=clock())
    scheduler.start()
    try:
        yield
    finally:
        scheduler.shutdown(wait=False)
