from rag.chunking import chunk_document, slugify
from rag.documents import AccessRules, parse_document
from rag.levels import Level

DOC = """---
title: Rollback Runbook
access: team
---
# Rollback Runbook

Use this when a deploy goes wrong.

## Helm rollback

Find the revision first.

```bash
# a comment that looks like a heading
helm history tidepool-api

helm rollback tidepool-api 41
```

### Verify

| check | expected |
|---|---|
| pods | Running |

## Helm rollback

Second section with the same name.
"""


def doc(text: str = DOC, path: str = "runbooks/rollback.md"):
    return parse_document(path, text.encode(), AccessRules({}, Level.restricted), 1_000_000)


def test_heading_paths_anchors_and_code_kept_whole():
    chunks = chunk_document(doc(), size=400, overlap=50)
    assert [c.section for c in chunks] == ["", "Helm rollback", "Helm rollback › Verify", "Helm rollback"]
    assert [c.anchor for c in chunks] == ["rollback-runbook", "helm-rollback", "verify", "helm-rollback-1"]
    code_chunk = chunks[1]
    assert ("```bash\n# a comment that looks like a heading\nhelm history tidepool-api\n\n"
            "helm rollback tidepool-api 41\n```") in code_chunk.text
    assert chunks[2].embed_text.startswith("Rollback Runbook › Helm rollback › Verify\n\n| check |")
    assert chunks[0].embed_text == "Rollback Runbook\n\nUse this when a deploy goes wrong."
    assert chunks[0].heading_path == "Rollback Runbook"


def test_ids_are_stable_and_local_to_their_section():
    before = chunk_document(doc(), size=400, overlap=50)
    edited = doc(DOC.replace("Use this when a deploy goes wrong.",
                             "Use this when a deploy goes wrong.\n\n" + "More. " * 100))
    after = chunk_document(edited, size=400, overlap=50)
    assert [c.chunk_id for c in chunk_document(doc(), 400, 50)] == [c.chunk_id for c in before]
    assert len(after) > len(before)
    later_before = {c.chunk_id: c.text_hash for c in before if c.section}
    later_after = {c.chunk_id: c.text_hash for c in after if c.section}
    assert later_before == later_after  # sections after the edit keep ids and hashes
    assert len({c.chunk_id for c in after}) == len(after)


def test_long_prose_is_split_with_overlap_and_size_bound():
    sentences = " ".join(f"Sentence number {i} explains one more detail of the process." for i in range(60))
    chunks = chunk_document(doc(f"---\ntitle: Long\naccess: public\n---\n## Part\n\n{sentences}\n"),
                            size=300, overlap=60)
    assert len(chunks) > 5
    assert all(len(c.text) <= 300 + 60 + 2 for c in chunks)
    for first, second in zip(chunks, chunks[1:]):
        assert second.text.split("\n\n")[0] in first.text  # the carried tail comes from the previous chunk


def test_oversized_code_block_is_cut_at_lines():
    code = "```\n" + "\n".join(f"echo line {i}" for i in range(200)) + "\n```"
    chunks = chunk_document(doc(f"---\ntitle: C\naccess: public\n---\n{code}\n"), size=300, overlap=0)
    assert len(chunks) > 3 and all(len(c.text) <= 300 for c in chunks)


def test_slugify_matches_github():
    assert slugify("Step 2: Install `wireguard` (macOS)") == "step-2-install-wireguard-macos"


def test_a_title_that_is_only_an_identifier_is_not_put_into_every_chunk():
    """A page without a title takes its file name; `2ec3def5abce1bd5-2-2124` names nothing, and
    its hex and digits would go into every chunk's embedding. A file name with words stays."""
    body = "Atmospheric pressure keeps body fluids liquid.\n\n## Symptoms\n\nAt altitude, oxygen is scarce."
    numbered = chunk_document(doc(body, "pages/2ec3def5abce1bd5-2-2124.md"), size=400, overlap=50)
    assert numbered[0].embed_text == "Atmospheric pressure keeps body fluids liquid."
    assert [c.heading_path for c in numbered] == ["", "Symptoms"]
    assert numbered[1].embed_text.startswith("Symptoms\n\nAt altitude")
    named = chunk_document(doc(body, "pages/pressure-2024.md"), size=400, overlap=50)
    assert [c.heading_path for c in named] == ["pressure 2024", "pressure 2024 › Symptoms"]
