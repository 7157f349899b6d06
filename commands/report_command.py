"""`docsbot report` (registered into the `docsbot` command by `register`): the docs-gaps report of
insights/gaps.py, the same the owners' weekly digest shows, for a terminal or (`--json`) a pipeline."""
from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from rag import Level

if TYPE_CHECKING:  # the command imports what it runs, so that registering it costs nothing
    from insights.gaps import Report
    from foundation.settings import Settings
    from state.proposals import Proposed

DEFAULT_DAYS = 7


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="questions the docs could not answer, 👎 and pages overdue for review")
    p.add_argument("--since", type=since_date, help=f"first day of the report, YYYY-MM-DD (default: {DEFAULT_DAYS} "
                                                    "days ago); it runs until now")
    p.add_argument("--level", choices=[level.name for level in Level], default="public",
                   help="the reader's access level: questions asked above it are left out (default: public); "
                        "at any level a question asked outside a public channel is a count, never quoted")
    p.add_argument("--area", help="only this docs area (front matter `area`, else the first folder)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=cmd_report)


def since_date(value: str) -> datetime:
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date like 2025-01-31") from None


def cmd_report(settings: Settings, args: argparse.Namespace) -> int:
    import asyncio

    now = datetime.now(timezone.utc)
    since = args.since or now - timedelta(days=DEFAULT_DAYS)
    level = Level.parse(args.level)
    report = asyncio.run(build(settings, level, since, now))
    proposed = asyncio.run(open_proposals(settings, level))
    if args.area:
        report = report.in_area(args.area)
    if args.json:
        print(json.dumps(report.to_json() | {"proposals": [
            {"page": p.page, "section": p.section, "url": p.url, "branch": p.branch, "proposer": p.proposer,
             "days": _age_days(p.created_ms, now)} for p in proposed]}, indent=2, ensure_ascii=False))
    else:
        from bot.gaps_text import plain

        print(plain(report))
        if proposed:
            print("\nOpen docs change proposals:")
            for p in proposed:
                where = f"{p.page} › {p.section}" if p.section else p.page
                print(f"  {where}: {p.url or p.branch} ({_age_days(p.created_ms, now)} days, by {p.proposer})")
    return 0


async def open_proposals(settings: Settings, level: Level) -> list[Proposed]:
    from foundation.wiring import open_state_db
    from state.proposals import Proposals

    db = await open_state_db(settings)
    try:
        return await Proposals(db).open(level)
    finally:
        await db.close()


def _age_days(created_ms: int, now: datetime) -> int:
    return max(0, int((now.timestamp() * 1000 - created_ms) // 86_400_000))


async def build(settings: Settings, level: Level, since: datetime, until: datetime) -> Report:
    from insights.gaps import GapFinder
    from state.gaps import Reader
    from foundation.wiring import gaps_config, open_engine, open_state_db

    engine = open_engine(settings, read_only=True)
    db = await open_state_db(settings)
    try:
        finder = GapFinder(db, engine, gaps_config(settings))
        # whoever runs it is nobody in particular: only public-channel questions are quoted
        return await finder.report(level, int(since.timestamp() * 1000), int(until.timestamp() * 1000), Reader())
    finally:
        await db.close()
        await engine.aclose()
