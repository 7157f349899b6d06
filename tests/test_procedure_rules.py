"""Rules the procedure golden set (eval/procedures/) showed missing, on real excerpts (the sample
docs and an openshift/runbooks page, chunked as they are indexed): a "how do I <verb>" question is
answered by the section whose heading names the verb (or what it undoes), a list of conditions is
not a procedure, and a command goes on into the next section when that one begins with one."""
from __future__ import annotations

from pathlib import Path

from rag.chunking import chunk_document
from rag.documents import AccessRules, load_folder
from rag.extractive import ExtractiveAnswerer
from rag.kinds import fits_kind
from rag.prompt import Source
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



def test_a_procedure_names_the_conditions_and_approvals_its_page_puts_before_it():
    # "When break-glass is allowed" and "Who approves" come before "Requesting access": named
    # first, in document order, each cited; the commands follow whole
    sources = page("runbooks/emergency-db-access.md", "Requesting access")
    text = answer("how do I get break-glass access to the production database?", sources)
    assert in_order(text, "› When break-glass is allowed [", "› Who approves [", "tp-breakglass request",
                    "tp-breakglass connect"), text
    assert "There is an **open SEV1" not in text and fences_balanced(text)  # named, not quoted
    # a row of a troubleshooting table is not a procedure: nothing to check before it
    row = answer("ok it says connected but none of the internal hostnames resolve",
                 page("onboarding/vpn-setup.md", "Troubleshooting"))
    assert "resolvconf" in row and "Before you start" not in row, row
    # the model gets the same conditions, whole, before the steps (rag/sourcing.py)
    groups, _ = ExtractiveAnswerer().spans("how do I get break-glass access to the production database?", sources)
    assert [q.section.own for q in groups[0][:3]] == ["When break-glass is allowed", "Who approves",
                                                      "Requesting access"]


# openshift/runbooks (Apache-2.0), cluster-etcd-operator: the page the question names, and another
# page's Defrag section that retrieval brings in beside it (more similar to the question, 0.75)
FSYNC_PAGE = """# etcdHighFsyncDurations

## Diagnosis

This could be result of slow disk possibly due to fragmented state in etcd or
simply due to slow disk.

### Slow disk

Checking disk related metrics and dashboards should provide a more clear
picture.

#### PromQL queries used to troubleshoot

`etcd_disk_wal_fsync_duration_seconds_bucket` reports the etcd disk fsync
duration, `etcd_server_leader_changes_seen_total` reports the leader changes. To
rule out a slow disk and confirm that the disk is reasonably fast, 99th
percentile of the etcd_disk_wal_fsync_duration_seconds_bucket should be less
than 10ms. Query in metrics UI:

```console
histogram_quantile(0.99, sum by (instance, le) (irate(etcd_disk_wal_fsync_duration_seconds_bucket{job="etcd"}[5m])))
```

#### Console dashboards

In the OpenShift dashboard console under Observe section, select the etcd
dashboard. There are both leader elections as well as Disk Sync Duration
dashboards which will assit with further issues.

## Mitigation

### Fragmented state

In the case of slow fisk or when the etcd DB size increases, we can defragment
existing etcd DB to optimize DB consumption. Run the following command in all etcd pods.

```console
$ etcdctl defrag
```

As validation, check the endpoint status of etcd members to know the reduced
size of etcd DB.
"""
QUOTA_DEFRAG = """When the etcd DB size increases, we can defragment existing etcd DB to optimize
DB consumption. Run the following command in all etcd pods.

```console
$ etcdctl defrag
```

As validation, check the endpoint status of etcd members to know the reduced
size of etcd DB."""


def fsync_sources(tmp_path: Path) -> list[Source]:
    (tmp_path / "etcdHighFsyncDurations.md").write_text(FSYNC_PAGE)
    (doc,), _ = load_folder(tmp_path, ["*.md"], [], AccessRules({}), 2_000_000)
    chunks = sorted(chunk_document(doc, 1000, 150), key=lambda c: (not c.section.startswith("Diagnosis › Slow"),
                                                                  c.ordinal))
    sources = [Source(n, doc.title, c.section, c.text, 0.704, doc.path, c.ordinal) for n, c in enumerate(chunks, 1)]
    return [sources[0], Source(len(sources) + 1, "etcdDatabaseQuotaLowSpace", "Mitigation › Defrag", QUOTA_DEFRAG,
                               0.747, "etcdDatabaseQuotaLowSpace.md", 9), *sources[1:]]


def test_the_heading_of_what_the_verb_undoes_answers_how_do_i(tmp_path: Path):
    # "defragment" is done under "Fragmented state" (the page's Mitigation), not where the fsync
    # metric is explained (its Diagnosis)
    text = answer("etcd fsync durations are high, how do I defragment the etcd database?", fsync_sources(tmp_path))
    assert "$ etcdctl defrag" in text, text
    assert fences_balanced(text)
