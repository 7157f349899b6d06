"""A quote must hold the kind of value asked for (issue 37): a "how much" or "how long" quotes the
number, a "what time" a time of day, a follow-up asks for what its thread asked, and a quote
without it is not an answer. The leave texts are written for these tests; the release-team line
is from the Sourcegraph handbook (content/departments/engineering/teams/release/, Apache-2.0,
Copyright Sourcegraph)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from foundation.settings import Settings
from foundation.wiring import rag_config
from rag import answerability
from rag.answer import NOT_SURE_LEAD
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.kinds import asks_yes_no, lacks_value, thread_kind
from rag.levels import Level
from rag.prompt import DECLINE_MARKER, Source
from rag.store.search import Store

LEAVE = [Source(1, "Benefits", "Benefits › Compassionate leave", (
    "When someone close to you dies, you can take paid time off to grieve, make arrangements and settle "
    "family affairs. Tell your manager your plans as soon as you can so they can arrange for your absence.\n\n"
    "You can take ten days of compassionate leave for a close family member, and three days for a more "
    "distant relative. If you know you will be away from work for much longer, please talk to your manager "
    "about that special case."), 0.6, "benefits.md", 1)]

ROTATION = [
    Source(1, "Secrets", "Secrets › Rotating the Stripe API keys", (
        "1. Create a new restricted Stripe API key in the dashboard.\n"
        "2. Store the new Stripe key in the vault and redeploy billing."), 0.6, "secrets.md", 1),
    Source(2, "Secrets", "Secrets › Rotation schedule", (
        "| Secret | Rotation interval |\n|---|---|\n| Stripe API keys | every 180 days |\n"
        "| Database passwords | every 90 days |"), 0.6, "secrets.md", 2),
]

PARENTAL = [
    Source(1, "State leave", "State leave › Colorado", (
        "- [Paid family leave for bonding](https://famli.example.gov/2024/bonding-leave-12) with a new baby "
        "or after the placement of a child."), 0.62, "state-leave.md", 1),
    Source(2, "Benefits", "Benefits › Family leave", (
        "If you become the primary caregiver of a child, you can take up to 16 weeks of leave at full pay. "
        "If you become the secondary caregiver of a new child, you can take up to 6 weeks of leave at full pay. "
        "You may choose to take additional unpaid leave as the primary or secondary caregiver."),
        0.6, "benefits.md", 2),
]
THREAD = [("user", "how much parental leave do I get if my partner is having a baby?"),
          ("agent", "As a secondary caregiver you can take up to 6 weeks of leave.")]

RELEASE = [Source(1, "Release team", "Release team › Meetings", (
    "The teams holds syncs twice weekly (Mon, Thu).\n\n- Add discussion items to the weekly sync doc."),
    0.6, "content/departments/engineering/teams/release/index.md", 1)]


def answer(question: str, sources: list[Source], history: list[tuple[str, str]] | None = None) -> str:
    return ExtractiveAnswerer().answer(question, sources, history or [])


def test_a_how_much_quotes_the_number_not_the_sentence_next_to_it() -> None:
    text = answer("my mum just passed away. how much compassionate leave can I take?", LEAVE)
    assert "ten days" in text


def test_a_follow_up_asks_for_the_value_its_thread_asked_for() -> None:
    text = answer("and if I'm the primary caregiver?", PARENTAL, THREAD)
    assert "16 weeks" in text and not text.startswith(DECLINE_MARKER)


def test_a_how_often_quotes_the_interval_not_the_steps_beside_it() -> None:
    text = answer("how often do we rotate the Stripe API keys?", ROTATION)
    assert "every 180 days" in text


def test_a_quote_without_the_time_asked_for_is_declined_with_its_near_miss() -> None:
    text = answer("what time is the Release team's weekly sync?", RELEASE)
    assert text == f"{DECLINE_MARKER} (closest: Release team › Release team › Meetings)"


@pytest.mark.parametrize(("question", "history", "kind"), [
    ("and if I'm the primary caregiver?", THREAD, "amount"),
    ("what if I pre-record it instead?", [("user", "how long should my demo be?")], "duration"),
    ("what about ingest-worker?", [("user", "how long does a rollback of tidepool-api take?")], "duration"),
    ("I missed it. where can I find the recording?", [("user", "when is the company meeting?")], None),
    ("what's our deadline to fix a high-severity vulnerability?", [], "duration"),
    ("what time is the sync?", [], "time"),
    ("what's the deductible on the medical plan?", [], "amount"),
    ("how often do we rotate the Stripe API keys?", [], "when"),
    ("how far back can we restore the database?", [], "duration"),
    ("What is the upper limit of Amazon RDS DB instances?", [], "amount"),
    ("what time window do deploys have?", [], None),
])
def test_thread_kind(question: str, history: list[tuple[str, str]], kind: str | None) -> None:
    assert thread_kind(question, history) == kind


@pytest.mark.parametrize(("kind", "text", "lacks"), [
    ("duration", "You can take ten days of leave.", False),
    ("duration", "within 3 business days", False),
    ("amount", "The company pays 75% of the premium.", False),
    ("amount", "Insurance is provided by 37signals through Blue Cross.", True),  # a name's digits
    ("amount", "See [the form](https://example.gov/2024/form-12).", True),  # a link's digits
    ("time", "Every other Tuesday 3:00-3:45pm UT", False),
    ("duration", "Default: timedelta(days=31) (2678400 seconds)", False),
    ("time", "The teams holds syncs twice weekly (Mon, Thu).", True),
    ("steps", "Anything at all", False),  # not judged by a pattern
])
def test_lacks_value(kind: str, text: str, lacks: bool) -> None:
    assert lacks_value(kind, text) is lacks


@pytest.fixture
def closed_gate(sample_index: Path, settings: Settings, embedder: LocalMiniLM) -> Engine:
    """The sample docs behind an answerability gate that declines everything."""
    shutil.copytree(sample_index, settings.data_dir)
    closed = answerability.Model({}, {}, {}, 0.0, 1.1)
    return Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer(), closed)


async def test_a_value_asked_goes_past_a_declining_gate_only_when_the_answer_holds_it(closed_gate: Engine) -> None:
    """The duration of break-glass credentials is quoted (it holds '4 hours'); a how-to whose quote
    is about too little of the question (its commands roll back Argo CD, not tidepool-api's 500s)
    is not answered: its closest passage is shown as not sure (issue 50), cited."""
    held = await closed_gate.ask("how long are break-glass db credentials valid?", Level.restricted)
    assert held.answered and "4 hours" in held.answer and held.confidence == "answer"
    how = await closed_gate.ask("tidepool-api is throwing 500s since the last deploy, how do I roll it back?",
                                Level.team)
    assert not how.answered and how.abstain_reason == "no_match" and how.confidence == "not_sure"
    assert how.answer.startswith(NOT_SURE_LEAD) and how.citations[0].doc_path == "runbooks/rollback.md"


async def test_a_how_to_goes_past_a_declining_gate_only_when_its_quote_shows_what_to_do(closed_gate: Engine) -> None:
    """Rolling back a deploy is answered with its commands (issue 37: the gate misreads casual
    how-tos); a how-to about something the sample docs never mention is still declined."""
    rollback = await closed_gate.ask("how do I roll back a deploy?", Level.restricted)
    assert rollback.answered and "argocd app set" in rollback.answer
    unknown = await closed_gate.ask("how do I book a meeting room in the Lisbon office?", Level.restricted)
    assert not unknown.answered and unknown.abstain_reason == "no_match"


@pytest.mark.parametrize(("question", "yes_no"), [
    ("can I deploy on friday?", True),
    ("I joined in March. do I have to redo the training in April?", True),
    ("so is there a budget for a desk?", True),
    ("how do I deploy on friday?", False),
    ("what can I expense?", False),
])
def test_asks_yes_no(question: str, yes_no: bool) -> None:
    assert asks_yes_no(question) is yes_no
