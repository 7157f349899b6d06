"""A follow-up's own new words choose what is read and quoted of the pages its thread's subject
found (issue 50 item 5): the rest of the page is read with the chunks that name the new object
first, and a passage that names none of them answers the thread's previous question, so the
quote holds what is asked now, not the subject's lead-in. Without an LLM: a real index of the
test's own pages, and the extractive answerer (the texts are written for these tests)."""
from __future__ import annotations

from pathlib import Path

import pytest

from foundation.wiring import open_engine
from rag import ExtractiveAnswerer, Level, LocalMiniLM
from rag.followup import Focus, focus
from rag.prompt import Source
from tests.support.corpus import indexed_pages
from tests.support.settings import make_settings

FILLER = ("Each stage has an owner in the security team, who records what was done in the tracking issue "
          "and links the pull requests that changed code. Work moves to the next stage once the owner has "
          "written down what was decided and who was told. ")
POLICY = "\n\n".join([
    "# Vulnerability management policy",
    "## Introduction\n\n" + "This policy says how we find, rate and remove weaknesses in our software. " + FILLER,
    "## Severity levels\n\n"
    "- **Critical**: a weakness that can be exploited without access and compromises the whole service.\n"
    "- **High**: a weakness that exposes customer data to a signed-in user.\n"
    "- **Medium**: a weakness that needs unusual access to exploit.\n"
    "- **Low**: a weakness with no direct impact.\n\n"
    "High-severity security vulnerabilities must be fixed by their deadline: 10 business days.",
    "## Discovery\n\n" + "Scanners, audits and reports from customers find weaknesses. " + FILLER,
    "## Triage\n\n" + "The on-call security engineer confirms each report and assigns an owner. " + FILLER,
    "## Disclosure\n\n" + "Customers hear of a fixed weakness in the release notes and the advisory. " + FILLER,
    "## Service level agreements\n\n"
    "Remediation times, counted from triage:\n\n"
    "- Critical: 3 business days\n- Medium: 40 business days\n- Low: 100 business days",
])
OTHERS = {
    "incidents.md": "# Incidents\n\n## Declaring one\n\nDeclare an incident in #incidents when customers are "
                    "affected. The incident commander runs the call and writes the timeline.",
    "newsletter.md": "# Infrastructure newsletter\n\n## January\n\nThe security team cleaned up all high and "
                     "critical findings in the infrastructure repository and added checks to CI.",
    "training.md": "# Security training\n\n## Yearly course\n\nEveryone takes the secure coding course once a "
                   "year; it covers how weaknesses are rated and fixed.",
}
TITLES = [
    Source(1, "Titles", "Titles › Programmers", (
        "Lead Programmers are expected to manage people: a Lead Programmer should be able to manage 1-2 "
        "L1-L3 programmers.\n\nPrincipal Programmers lead projects across teams."), 0.6, "titles.md", 1),
    Source(2, "Titles", "Titles › Operations", (
        "SREs keep the platform running.\n\nA Lead SRE should be capable of managing 2-3 L1-L3 SREs."),
        0.6, "titles.md", 2),
]
THREAD = [("user", "what's our deadline to fix a high-severity security vulnerability?"),
          ("agent", "High-severity vulnerabilities must be fixed within 10 business days.")]


@pytest.fixture(scope="module")
def policy_index(tmp_path_factory: pytest.TempPathFactory, embedder: LocalMiniLM) -> str:
    return indexed_pages(tmp_path_factory.mktemp("policy"), embedder, {"security/policy.md": POLICY, **OTHERS})


def test_a_follow_up_names_its_own_new_terms_only_when_it_refers_back() -> None:
    assert focus("and if it's critical?", THREAD).new == {"critical"}
    assert {"deadline", "high-severity", "vulnerability"} <= focus("and if it's critical?", THREAD).subject
    assert focus("how do I report a phishing email?", THREAD) == Focus()  # a question of its own
    assert focus("and if it's critical?", []) == Focus()


def test_a_follow_up_quotes_its_new_object_not_the_line_that_shares_the_most_thread_words() -> None:
    thread = [("user", "how many people is a Lead Programmer expected to be able to manage?"),
              ("agent", "A Lead Programmer should be able to manage 1-2 L1-L3 programmers.")]
    text = ExtractiveAnswerer().answer("and a Lead SRE?", TITLES, thread)
    assert "managing 2-3 L1-L3 SREs" in text and "1-2" not in text


async def test_the_rest_of_the_page_is_read_for_the_follow_ups_new_object_first(
        policy_index: str, embedder: LocalMiniLM, tmp_path: Path) -> None:
    # the budget leaves room for the selected chunks and about two more of the page: in page order,
    # the Discovery and Triage sections, not the list that says how long a critical one may take
    settings = make_settings(Path(policy_index), context_budget_chars=1600)
    engine = open_engine(settings, generator=ExtractiveAnswerer())
    engine.embedder = embedder
    answer = await engine.ask("and if it's critical?", Level.restricted, THREAD)
    assert "Critical: 3 business days" in answer.answer
    assert answer.citations and answer.citations[0].doc_path == "security/policy.md"
