"""Rules the procedure golden set (eval/procedures/) showed missing, on the sample docs as they
are chunked: a "how do I <verb>" question is answered by the section whose heading names the verb."""
from __future__ import annotations

from rag.spans import fences_balanced
from tests.test_extractive_spans import answer, in_order, page


def test_the_section_whose_heading_names_the_verb_answers_how_do_i():
    # Step 1's list names "lag on all partitions"; the question asks how to scale out: Step 2 › Scale out.
    text = answer("ingest-worker lag grows on all partitions, how do I scale it out?",
                  page("runbooks/ingest-backlog.md", "Step 1"))
    assert in_order(text, "kubectl -n tidepool patch hpa ingest-worker",
                    "kubectl -n tidepool get hpa ingest-worker"), text
    assert fences_balanced(text)
