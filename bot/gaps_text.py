"""The docs-gaps report in words: Slack blocks (the digest, `/docs gaps`, the App Home) and plain
text (`docsbot report`), from one list of lines so both say the same. A question the reader may
not read (insights/gaps.py) is counted, "not quoted", in its group, which is then named after its page."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from bot.blocks import escape, escape_within, section
from insights.gaps import Complaint, Gap, Page, Report, area_of

QUOTED = 300  # characters of a question quoted in a line
KINDS = {"no_match": "nothing close", "below_gate": "close but not answerable", "declined": "declined"}
REASONS = {"wrong": "wrong", "outdated": "outdated", "missing": "missing information",
           "not_allowed": "shouldn't be shared", "other": "other"}
GAPS = "*Questions the docs could not answer*"
DOWNVOTES = "*👎 on answers, with the reasons given*"
OVERDUE = "*Pages answers rely on that are overdue for review*"
NOTHING = "Nothing to report: every question was answered, no 👎, no page overdue for review."

Link = Callable[[str, str], str]  # (url, label) -> how a link is written
Quote = Callable[[str, int], str]  # (text, limit) -> the text, shortened and made safe


def slack_link(url: str, label: str) -> str:
    return f"<{url}|{escape(label)}>" if url else escape(label)


def text_link(url: str, label: str) -> str:
    return f"{label} ({url})" if url else label


def _plain(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _page(page: Page | None, link: Link, quote: Quote) -> str:
    if page is None:
        return "no page comes close"
    owners = f", owners {quote(' '.join(page.owners), QUOTED)}" if page.owners else ", no owner"
    return f"{link(page.url, page.title or page.path)} ({quote(area_of(page), QUOTED)}{owners})"


def _askers(askers: tuple[str, ...], slack: bool) -> str:
    if not askers:
        return ""
    return " · asked by " + ", ".join(f"<@{a}>" if slack else a for a in askers)


def _gap(gap: Gap, link: Link, quote: Quote, slack: bool) -> str:
    kinds = ", ".join(f"{KINDS.get(kind, kind)} {n}" for kind, n in gap.kinds.items())
    if gap.unquoted:
        kinds += f"; {gap.unquoted} not quoted" if gap.example else "; not quoted"
    times = f"{gap.count}×" if gap.count > 1 else "once"
    label = f": “{quote(gap.example, QUOTED)}”" if gap.example else (
        f" about {quote(gap.label, QUOTED)}" if gap.label else "")
    return (f"• {times}{label} ({kinds}) · closest: {_page(gap.page, link, quote)}"
            f"{_askers(gap.askers, slack)}")


def _complaint(d: Complaint, link: Link, quote: Quote, slack: bool) -> str:
    voters = f" ({d.voters} people)" if d.voters > 1 else ""
    if not d.question:
        answers = f"{d.answers} answers" if d.answers > 1 else "an answer"
        return (f"• 👎 on {answers} (not quoted): {REASONS.get(d.reason, 'no reason given')}"
                f"{voters} · {_page(d.page, link, quote)}")
    return (f"• “{quote(d.question, QUOTED)}”: {REASONS.get(d.reason, 'no reason given')}{voters}"
            + (f", expected “{quote(d.expected, QUOTED)}”" if d.expected else "")
            + f" · {_page(d.page, link, quote)}{_askers(d.askers, slack)}")


def lines(report: Report, slack: bool) -> list[tuple[str, list[str]]]:
    """(heading, lines) of each part of the report that has something in it."""
    link: Link = slack_link if slack else text_link
    quote: Quote = escape_within if slack else _plain
    parts = []
    if report.gaps:
        parts.append((GAPS, [_gap(g, link, quote, slack) for g in report.gaps]))
    if report.downvotes:
        parts.append((DOWNVOTES, [_complaint(d, link, quote, slack) for d in report.downvotes]))
    if report.overdue:
        parts.append((OVERDUE, [
            f"• {_page(o.page, link, quote)}: cited {o.citations}× in 30 days, "
            + (f"last reviewed {o.page.reviewed}" if o.page.reviewed else f"last commit {o.page.commit_date[:10]}")
            + f", {o.days_overdue} days past its review"
            for o in report.overdue]))
    return parts


def _window(report: Report) -> str:
    def day(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d")

    return f"{day(report.since_ms)} to {day(report.until_ms)}"


def message(report: Report, title: str) -> dict[str, Any]:
    """Slack blocks: the title, then one section per line (each well under Block Kit's limits)."""
    blocks = [section(f"*{title}* ({_window(report)})")]
    for heading, items in lines(report, slack=True):
        blocks.append(section(heading))
        blocks.extend(section(item) for item in items)
    if report.empty:
        blocks.append(section(NOTHING))
    return {"text": title, "blocks": blocks}


def plain(report: Report) -> str:
    out = [f"Docs gaps, {_window(report)}, at level {report.level.name}"]
    for heading, items in lines(report, slack=False):
        out += ["", heading.strip("*"), *items]
    if report.empty:
        out += ["", NOTHING]
    return "\n".join(out)


def summary(report: Report, owners: Iterable[str]) -> dict[str, Any]:
    """One section for the App Home: how much of the report is the owner's, and where to read it."""
    missed = sum(gap.count for gap in report.gaps)
    label = report.gaps[0].label if report.gaps else ""
    quoted = report.gaps[0].example if report.gaps else ""
    top = (f" (most asked: “{escape_within(label, QUOTED)}”)" if quoted else
           f" (most asked: about {escape_within(label, QUOTED)})" if label else "")
    return section(f"*Your docs this week* (as {escape(', '.join(sorted(owners)))}): {missed} question"
                   f"{'s' if missed != 1 else ''} they could not answer{top}, {len(report.downvotes)} 👎, "
                   f"{len(report.overdue)} page{'s' if len(report.overdue) != 1 else ''} answers rely on overdue "
                   "for review. `/docs gaps` lists them.")
