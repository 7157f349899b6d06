"""One language at a time: translations of a page (`cache.ja.mdx`, `i18n/ja/...`) are recorded with
their language and page, and a question is answered from one variant of each page, the asker's
where it exists, else the docs' default. Real docs folders indexed with the real embedding model,
the real LanceDB index, and the local Slack harness for the asker's locale."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from bot.local import demo
from bot.local.harness import local_slack
from bot.local.standin import visible_text
from foundation.settings import Settings
from foundation.wiring import lease_config, rag_config
from rag import Engine, ExtractiveAnswerer, Level, LocalMiniLM, load_folder
from rag.store.search import Store
from rag.formats.language import Variant, language_folders, language_tag, variant
from rag.retrieval import Languages, languages_for, one_language
from rag.store import Hit, chunk_schema
from sync.folder import index_folder
from tests.support.settings import make_settings
from tests.support.slack import answers, mention

CACHE_EN = """---
title: Build cache
access: public
---
# Build cache

The build cache keeps compiled artifacts for 14 days. Clear the build cache with `make cache-clear`
when a build picks up stale artifacts. The cache lives in the bucket acme-build-cache.
"""
CACHE_JA = """---
title: ビルドキャッシュ (Build cache)
access: public
---
# ビルドキャッシュ

ビルドキャッシュはコンパイル済みの成果物を14日間保持します。The build cache keeps compiled artifacts
for 14 days. 古い成果物が使われたときは `make cache-clear` でビルドキャッシュを消去します。Clear the build
cache with `make cache-clear`. The cache lives in the bucket acme-build-cache.
"""
CACHE_KO = """---
title: 빌드 캐시 (Build cache)
access: public
---
# 빌드 캐시

빌드 캐시는 컴파일된 아티팩트를 14일 동안 보관합니다. The build cache keeps compiled artifacts for 14
days. Clear the build cache with `make cache-clear` (빌드 캐시 지우기). The cache lives in the bucket
acme-build-cache.
"""
PAGES = {
    "cache.mdx": CACHE_EN,
    "cache.ja.mdx": CACHE_JA,
    "cache.ko.mdx": CACHE_KO,
    "oncall.mdx": "---\ntitle: On-call\naccess: public\n---\n# On-call\n\nThe on-call engineer answers pages "
                  "within 15 minutes. Rotations change every Monday at 10:00; swap a shift in PagerDuty.\n",
    "vpn.mdx": "---\ntitle: VPN\naccess: public\n---\n# VPN\n\nInstall WireGuard and import the profile from "
               "vpn.example.com. The VPN disconnects after 12 hours.\n",
    "vpn.ja.mdx": "---\ntitle: VPN (日本語)\naccess: public\n---\n# VPN\n\nWireGuard をインストールし、vpn.example.com "
                  "からプロファイルを読み込みます。Install WireGuard and import the profile from vpn.example.com. "
                  "The VPN disconnects after 12 hours.\n",
    "release.mdx": "---\ntitle: Releases\naccess: public\n---\n# Releases\n\nReleases ship on Tuesdays. Tag the "
                   "commit with vX.Y.Z and the pipeline publishes it.\n",
}
CACHE_QUESTION = "how long does the build cache keep compiled artifacts?"
ONCALL_QUESTION = "how fast must the on-call engineer answer a page?"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


# -- which language a path marks -----------------------------------------------------------------
@pytest.mark.parametrize(("path", "language", "page"), [
    ("cache.mdx", "", "cache.mdx"),
    ("cache.ja.mdx", "ja", "cache.mdx"),  # Nextra
    ("guide/setup.ko.md", "ko", "guide/setup.md"),  # MkDocs i18n, suffix style
    ("guide/setup.pt-BR.md", "pt-BR", "guide/setup.md"),
    ("guide/setup.zh-hans.md", "zh-Hans", "guide/setup.md"),
    ("content/_index.fr.md", "fr", "content/_index.md"),  # Hugo translation by file name
    ("i18n/ja/docusaurus-plugin-content-docs/current/intro.md", "ja", "docs/intro.md"),
    ("site/i18n/ko/docusaurus-plugin-content-docs/version-2.0/a.md", "ko", "site/versioned_docs/version-2.0/a.md"),
    ("i18n/fr/docusaurus-plugin-content-blog/2024-launch.md", "fr", "blog/2024-launch.md"),
    ("locales/de/guide.md", "de", "guide.md"),
    ("docs/locale/es/guide.rst", "es", "docs/guide.rst"),
    # not languages
    ("v2.md", "", "v2.md"),
    ("setup.config.md", "", "setup.config.md"),
    ("install.sh.md", "", "install.sh.md"),
    ("notes.md.md", "", "notes.md.md"),
    ("ja.md", "", "ja.md"),  # a page about Japan: no stem before the code
    ("it/vpn.md", "", "it/vpn.md"),  # no language folders were found in this tree
])
def test_a_path_marks_its_language_and_page(path: str, language: str, page: str) -> None:
    assert variant(path) == Variant(language, page)


def test_language_folders_mark_a_language_only_beside_another(tmp_path: Path) -> None:
    hugo = write(tmp_path / "hugo", {"content/en/docs/a.md": "a", "content/ja/docs/a.md": "a", "content/it/b.md": "b"})
    assert language_folders(hugo) == {"content/en", "content/ja", "content/it"}
    assert variant("content/ja/docs/a.md", language_folders(hugo)) == Variant("ja", "content/docs/a.md")
    sphinx = write(tmp_path / "sphinx", {"en/index.rst": "a", "fr/index.rst": "a", "api/x.rst": "x"})
    assert variant("fr/index.rst", language_folders(sphinx)) == Variant("fr", "index.rst")
    assert variant("api/x.rst", language_folders(sphinx)) == Variant("", "api/x.rst")
    mkdocs = write(tmp_path / "mkdocs", {"docs/en/a.md": "a", "docs/de/a.md": "a"})
    assert language_folders(mkdocs) == {"docs/en", "docs/de"}
    one = write(tmp_path / "one", {"it/vpn.md": "vpn", "hr/leave.md": "leave", "ops/a.md": "a"})
    assert language_folders(one) == {"it", "hr"}  # two language codes side by side: read as a locale tree
    alone = write(tmp_path / "alone", {"it/vpn.md": "vpn", "ops/a.md": "a"})
    assert language_folders(alone) == frozenset()


def test_language_tags_are_known_codes_written_the_canonical_way() -> None:
    assert [language_tag(t) for t in ("JA", "pt_br", "zh-hant", "en-419", "v2", "md", "config", "xx")] == \
        ["ja", "pt-BR", "zh-Hant", "en-419", "", "", "", ""]


def test_documents_carry_language_and_page(tmp_path: Path) -> None:
    root = write(tmp_path / "docs", {**PAGES, "en/x.md": "# X\n\nText.\n", "ja/x.md": "# X\n\nテキスト。\n"})
    docs, skipped = load_folder(root, ["**/*.mdx", "**/*.md"], [], rag_config(make_settings(tmp_path)).docs
                                .access_rules(), 100_000)
    assert not skipped
    marked = {d.path: (d.language, d.page) for d in docs}
    assert marked["cache.mdx"] == ("", "cache.mdx") and marked["cache.ko.mdx"] == ("ko", "cache.mdx")
    assert marked["ja/x.md"] == ("ja", "x.md") and marked["en/x.md"] == ("en", "x.md")


# -- the docs' default language -------------------------------------------------------------------
def test_the_default_language_is_named_or_the_most_common() -> None:
    assert languages_for("ja", "", {"": 40}) is None  # one language: nothing to choose
    assert languages_for("ja", "", {"": 5, "ja": 5, "ko": 2}) == Languages("ja", "", "", 3)  # a tie: the unmarked
    assert languages_for("", "", {"en": 9, "ja": 4}).default == "en"  # Hugo: every page marked
    assert languages_for("", "en", {"": 3, "ja": 9}).default == "en"


def test_a_page_is_taken_in_the_askers_language_else_the_default_else_its_best() -> None:
    hugo = Languages("de", "en", "", 3)
    assert hugo.choose({"ja": 0, "en": 3}) == "en"  # no German variant: the default's
    assert hugo.choose({"ja": 0, "fr": 2}) == "ja"  # neither: the best ranked
    assert Languages("pt", "", "", 3).choose({"": 0, "pt-BR": 5}) == "pt-BR"  # by the primary subtag
    assert Languages("en", "", "en", 2).choose({"": 4, "ja": 0}) == ""  # the unmarked docs are English
    assert Languages("", "", "", 2).choose({"ja": 0, "": 9}) == ""  # an unknown asker: the default


def test_one_language_keeps_one_variant_per_page_in_every_list() -> None:
    def hit(chunk: str) -> Hit:
        return Hit({"chunk_id": chunk, "doc_path": chunk.split("#")[0], "access_rank": 0}, np.zeros(2), 0.0)

    labels = {"a.md#0": ("a.md", ""), "a.ja.md#0": ("a.md", "ja"), "b.md#0": ("b.md", ""),
              "a.ko.md#0": ("a.md", "ko")}
    found = {"dense": [hit("a.ja.md#0"), hit("a.md#0"), hit("b.md#0"), hit("a.ko.md#0")],
             "bm25": [hit("a.ko.md#0"), hit("b.md#0"), hit("a.md#0")]}
    kept = one_language(found, labels, Languages("ja", "", "", 3), limit=2)
    assert [[h.row["chunk_id"] for h in hits] for hits in kept.values()] == [["a.ja.md#0", "b.md#0"], ["b.md#0"]]


def test_the_docs_language_setting_is_a_language_tag(tmp_path: Path) -> None:
    assert make_settings(tmp_path, docs_language="pt_br").docs_language == "pt-BR"
    assert rag_config(make_settings(tmp_path, docs_language="EN")).docs.language == "en"
    assert Settings(_env_file=None).docs_language == ""
    with pytest.raises(ValidationError, match="docs_language"):
        make_settings(tmp_path, docs_language="english please")


# -- answering from one language --------------------------------------------------------------------
@pytest.fixture
def multilingual(tmp_path: Path, embedder: LocalMiniLM) -> Engine:
    settings = make_settings(tmp_path / "index")
    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    index_folder(engine, lease_config(settings), write(tmp_path / "docs", PAGES))
    return engine


def pages_of(paths: list[str]) -> list[str]:
    return [variant(p).page for p in paths]


async def test_an_english_question_cites_the_english_page_and_no_page_twice(multilingual: Engine) -> None:
    answer = await multilingual.ask(CACHE_QUESTION, Level.public)
    assert answer.answered and answer.citations[0].doc_path == "cache.mdx"
    retrieved = [r["doc_path"] for r in answer.retrieved]
    assert len(pages_of(retrieved)) == len(set(pages_of(retrieved)))
    result, _, _ = await multilingual.search(CACHE_QUESTION, Level.public)
    selected = [c.row["doc_path"] for c in result.selected]
    assert selected[0] == "cache.mdx" and len(set(pages_of(selected))) == len(selected)
    assert not {"cache.ja.mdx", "cache.ko.mdx"} & {h.row["doc_path"] for ranked in result.lists for h in ranked.hits}


async def test_a_japanese_asker_gets_the_japanese_page(multilingual: Engine) -> None:
    answer = await multilingual.ask(CACHE_QUESTION, Level.public, language="ja")
    assert answer.answered and answer.citations[0].doc_path == "cache.ja.mdx"
    assert not {"cache.mdx", "cache.ko.mdx"} & {r["doc_path"] for r in answer.retrieved}
    result, _, _ = await multilingual.search(CACHE_QUESTION, Level.public, language="ko")
    assert result.selected[0].row["doc_path"] == "cache.ko.mdx"


async def test_a_page_without_the_askers_language_answers_from_the_default(multilingual: Engine) -> None:
    answer = await multilingual.ask(ONCALL_QUESTION, Level.public, language="ja")
    assert answer.answered and answer.citations[0].doc_path == "oncall.mdx"
    result, _, _ = await multilingual.search("how long until the VPN disconnects?", Level.public, language="ko")
    assert result.selected[0].row["doc_path"] == "vpn.mdx"  # a Japanese variant, no Korean one: the default


async def test_the_index_records_language_and_page(multilingual: Engine) -> None:
    assert await multilingual.store.languages() == {"": 4, "ja": 2, "ko": 1}
    [row] = [r for r in multilingual.store.chunk_columns(["cache.ja.mdx"], "language", "page")]
    assert (row["language"], row["page"]) == ("ja", "cache.mdx")


async def test_an_index_in_one_language_is_searched_as_before(sample_engine: Engine) -> None:
    assert await sample_engine.store.languages() == {"": len(sample_engine.store.doc_hashes())}
    assert await sample_engine.languages("ja") is None  # no variants: retrieval does not change


async def test_an_index_written_before_languages_reads_as_the_default(tmp_path: Path) -> None:
    schema = chunk_schema(4)
    full = pa.Table.from_pylist([{
        **{f.name: "" for f in schema if pa.types.is_string(f.type)}, "chunk_id": "c1", "doc_path": "a.ja.md",
        "ordinal": 0, "access_rank": 0, "language": "ja", "page": "a.md", "vector": [0.5, 0.5, 0.5, 0.5],
    }], schema=schema)
    store = Store(str(tmp_path / "index"), refresh_s=0)
    store.write(full.drop_columns(["language", "page"]), None)  # as an earlier version wrote it
    assert await store.languages() == {} and await store.labels(["c1"]) == {}
    assert (await store.rows(["c1"]))["c1"]["language"] == ""
    store.write(full, None)  # the next write adds the columns
    assert await store.languages() == {"ja": 1}
    assert await store.labels(["c1"]) == {"c1": ("a.md", "ja")}


# -- the asker's language from Slack ------------------------------------------------------------------
JUN = "U_JUN"  # a member whose Slack locale is Japanese


async def test_a_slack_user_with_a_japanese_locale_gets_the_japanese_page(
    tmp_path: Path, multilingual: Engine,
) -> None:
    workspace = demo.demo_workspace()
    workspace.add_user(JUN, "jun", "jun@example.com", locale="ja-JP")
    workspace.channels[demo.GENERAL]["members"].append(JUN)
    async with local_slack(make_settings(tmp_path / "index"), multilingual, workspace) as local:
        await mention(local, JUN, demo.GENERAL, CACHE_QUESTION)
        await mention(local, demo.BOB, demo.GENERAL, CACHE_QUESTION)
        await local.settle()
        japanese, english = (visible_text(m) for m in answers(local, demo.GENERAL))
        lookups = local.standin.calls_to("users.info")
        assert await local.bot.services.answerer.directory.user_language("U_NOBODY") == ""  # users.info fails
    # the sources line names the cited page by its title: the Japanese variant's, else the English one's
    assert "[1] ビルドキャッシュ" in japanese
    assert "ビルドキャッシュ" not in english and "[1] Build cache" in english
    assert lookups and all(str(c["include_locale"]) in ("1", "true", "True") for c in lookups)
