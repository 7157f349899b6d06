"""Rules the procedure golden set (eval/procedures/) showed missing, on the sample docs as they
are chunked: a "how do I <verb>" question is answered by the section whose heading names the verb."""
from __future__ import annotations

from rag.kinds import fits_kind
from rag.spans import fences_balanced
from tests.test_extractive_spans import answer, in_order, page


def test_the_section_whose_heading_names_the_verb_answers_how_do_i():
    # Step 1's list names "lag on all partitions"; the question asks how to scale out: Step 2 › Scale out.
    text = answer("ingest-worker lag grows on all partitions, how do I scale it out?",
                  page("runbooks/ingest-backlog.md", "Step 1"))
    assert in_order(text, "kubectl -n tidepool patch hpa ingest-worker",
                    "kubectl -n tidepool get hpa ingest-worker"), text
    assert fences_balanced(text)


def test_a_numbered_list_of_conditions_is_not_the_procedure_a_how_do_i_asks_for():
    # "When break-glass is allowed" is a numbered list ("1. There is an open SEV1 ..."), the way
    # to get access is the `tp-breakglass request` command under "Requesting access"
    sources = page("runbooks/emergency-db-access.md", "When break-glass is allowed")
    text = answer("how do I get break-glass access to the production database?", sources)
    assert "tp-breakglass request" in text and "There is an **open SEV1" not in text, text
    assert fences_balanced(text)
    assert fits_kind("steps", "When break-glass is allowed", "1. There is an **open SEV1 or SEV2 incident**") == 0.0
    assert fits_kind("steps", "Rollback", "1. Pause Argo CD auto-sync for the app") == 1.0
    assert fits_kind("steps", "Step 2: rules", "2. The problem cannot be solved through tooling") == 0.5


def test_a_command_goes_on_into_the_next_section_when_that_one_begins_with_a_command():
    # "Requesting access" ends with `tp-breakglass request`; "Connecting" begins with `... connect`
    sources = page("runbooks/emergency-db-access.md", "Requesting access")
    text = answer("how do I get break-glass access to the production database?", sources)
    assert in_order(text, "tp-breakglass request", "*Connecting:*", "tp-breakglass connect BG-0193"), text
    assert fences_balanced(text) and "tp-breakglass revoke" not in text  # a sub-section is not the next step
    # a question that is not about doing something is not extended
    which = answer("which CLI requests break-glass access?", sources)
    assert "tp-breakglass request" in which and "tp-breakglass connect" not in which, which
