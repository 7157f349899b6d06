"""Freshness: whether a page is still current, and how long since someone looked at it.

Front matter may say that a page is `deprecated` or a `draft` (`status:`, or `deprecated: true`),
when it was last reviewed (`last_reviewed: 2025-03-01`) and how often it is to be reviewed
(`review_in: 90d`, `6 months`, `1 year`); rag/documents.py reads them, the indexer stores them on
every chunk row. A page is due for review its review period after its last review, or, with no
`last_reviewed`, after its last commit; the period is its `review_in`, else the configured
default (DOCSBOT_REVIEW_DAYS). A citation of a deprecated, draft or overdue page carries a warning
(`citation_warning`), and the docs-gaps report lists the overdue pages answers rely on
(insights/gaps.py, through `review_of`).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

DEPRECATED, DRAFT = "deprecated", "draft"
STATUSES = (DEPRECATED, DRAFT)
MAX_REVIEW_DAYS = 36_500  # a hundred years: DOCSBOT_REVIEW_DAYS's bound too

# A review period: a count and a unit (days without one). A month is 30 days and a year 365: the
# period is stored in days, and a review date a few days either way does not matter.
_PERIOD = re.compile(r"(\d+)\s*(d|days?|w|weeks?|mo|months?|y|yrs?|years?)?", re.I)
_UNIT_DAYS = {"d": 1, "w": 7, "mo": 30, "y": 365}


def period_days(text: str) -> int | None:
    """`90`, `90d`, `2 weeks`, `6 months`, `1 year` in days; None for anything else."""
    match = _PERIOD.fullmatch(text.strip())
    if match is None:
        return None
    unit = (match.group(2) or "d").lower()
    return int(match.group(1)) * _UNIT_DAYS["mo" if unit.startswith("mo") else unit[0]]


@dataclass(frozen=True)
class Review:
    """When a page was last looked at and when it is next due."""

    since: datetime  # the last review (midnight UTC of its day), else the last commit
    reviewed: bool  # `since` is a review from the front matter, not a commit
    due: datetime

    def days_overdue(self, now: datetime) -> int | None:
        """Whole days past the review date at `now`; None when it is not past."""
        return (now - self.due) // timedelta(days=1) if now > self.due else None


def review_of(reviewed: str, commit_date: str, review_days: int, default_days: int,
              status: str = "") -> Review | None:
    """The review state of a chunk row's `reviewed`, `commit_date`, `review_days` (0: the
    default) and `status`; None when the page has neither date (a folder outside git, no
    `last_reviewed`) or is deprecated (retired: no review is due)."""
    if status == DEPRECATED:
        return None
    since = _instant(reviewed)
    from_review = since is not None
    if since is None:
        since = _instant(commit_date)
    if since is None:
        return None
    return Review(since, from_review, since + timedelta(days=review_days or default_days))


def _instant(text: str) -> datetime | None:
    """An ISO date or timestamp as an aware datetime (a date: its midnight, UTC), or None."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def citation_warning(row: Mapping[str, Any], default_days: int, now: datetime) -> str:
    """What a citation of this chunk row warns of: "⚠ deprecated" or "⚠ draft" from the front
    matter, else "⚠ last reviewed 14 months ago" ("last updated" when the date is the last
    commit) once the page is past its review date; "" when there is nothing to say."""
    status = row.get("status") or ""
    if status:
        return f"⚠ {status}"
    review = review_of(row.get("reviewed") or "", row.get("commit_date") or "", row.get("review_days") or 0,
                       default_days)
    if review is None or review.days_overdue(now) is None:
        return ""
    said = "last reviewed" if review.reviewed else "last updated"
    return f"⚠ {said} {age_words(review.since.date(), now.date())} ago"


def age_words(since: date, today: date) -> str:
    """An age as people say it: under 60 days in days, under 24 months in months, else in years
    (whole calendar months and years)."""
    days = (today - since).days
    if days < 60:
        return _counted(days, "day")
    months = (today.year - since.year) * 12 + today.month - since.month - (today.day < since.day)
    return _counted(months, "month") if months < 24 else _counted(months // 12, "year")


def _counted(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
