# synprep — two commands do everything on a fresh machine:
#   make sample   set up .venv, run the main job on sample_data/ (output in build/sample/)
#   make test     set up .venv, lint, type-check and run the test suite
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
SYNPREP := $(VENV)/bin/synprep
# torch first, so that nothing pulls a CUDA build on a CPU machine.
# On a GPU machine: make setup TORCH=torch
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.synprep-installed
SHARED ?= ../shared
JOBS   ?= 2

.PHONY: setup sample test pytest lint typecheck bench iwslt14 iwslt14-test clean gpu-suite gpu-tests

setup: $(STAMP)

# pip's log goes to .venv/pip.log and is shown only when an install fails.
PIPLOG = > $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip $(PIPLOG)
	$(PY) -m pip install -q "$(TORCH)" $(PIPLOG)
	$(PY) -m pip install -q -e '.[dev]' $(PIPLOG)
	touch $(STAMP)

# ruff; deptry: every import in synprep/ is a declared dependency, and none is declared only for development;
# import-linter: the package's floors and forbidden imports ([tool.importlinter] in pyproject.toml)
lint: setup
	$(PY) -m ruff check synprep tests benchmarks
	$(PY) -m deptry synprep
	$(VENV)/bin/lint-imports --no-cache --no-logo

typecheck: setup
	$(PY) -m mypy

# fairseq-venv (pipelines/fairseq.mk): real fairseq for the export test, built once and reused;
# docs and install-check (pipelines/release.mk): mkdocs --strict, the core install's main job.
# Each phase's wall time is printed as it ends and in one table at the end; the budget of the whole
# (.ci/run, docs/contributing.md) is 25 minutes on the 2-core machine with the fairseq venv cached.
PHASES := setup lint typecheck docs install-check fairseq-venv pytest
test:
	times=""
	for phase in $(PHASES); do
	  start=$$SECONDS
	  $(MAKE) --no-print-directory $$phase
	  times="$$times$$(printf '  %-14s %5d s' $$phase $$((SECONDS - start)))\n"
	  printf 'make test: %s took %d s\n' $$phase $$((SECONDS - start))
	done
	printf 'make test: phases\n%b  %-14s %5d s\n' "$$times" total $$SECONDS

# the test suite over the cores (pytest-xdist; a module's tests stay in one worker, so its fixtures are
# built once), with its 25 slowest tests listed at the end
PYTEST_JOBS ?= $(JOBS)
pytest: setup
	$(PY) -m pytest -n $(PYTEST_JOBS) --dist loadfile --durations=25

include pipelines/sample.mk
include pipelines/iwslt14.mk
include pipelines/pud.mk
include pipelines/multi30k.mk
include pipelines/fairseq.mk
include pipelines/release.mk

# every stage beside what a user would run instead (benchmarks/bench_peers.py, with the stanza parse beside a
# plain stanza Pipeline), one JSON row each: small sizes, a few minutes on 2 cores, into build/bench/results/
# and shown as a table; BENCH=--full measures the published rows into benchmarks/results/ and regenerates
# docs/benchmarks.md. The export, train and translate rows use the fairseq venv when it is built.
BENCH ?=
bench: setup
	$(PY) benchmarks/bench_peers.py $(BENCH)
	if [ "$(BENCH)" = --full ]; then $(PY) benchmarks/report.py > docs/benchmarks.md
	else $(PY) benchmarks/report.py build/bench/results; fi

# the GPU check in one go (benchmarks/gpu_suite.sh; on the GPU machine after `source .gpu/unpack.sh`):
# one JSON object per figure. DEVICE=cpu SMALL=--small for the tiny CPU run the test suite makes.
DEVICE ?= cuda
SMALL  ?=
# the project's .venv where there is one, else the machine's python3 (the GPU machine: the bundle's PYTHONPATH)
GPU_PY = $(or $(wildcard $(PY)),python3)
gpu-suite:
	PY=$(GPU_PY) bash benchmarks/gpu_suite.sh --device $(DEVICE) $(SMALL)

# the tests that run only where CUDA is (skipped elsewhere): graphs against eager, no sync in an update, the
# SLR maths on CUDA, pinned snapshots; on the GPU machine after `source .gpu/unpack.sh`
GPU_TESTS := tests/test_train_graphs.py::test_cuda_graphs_train_as_eager_does \
	tests/test_train_syncs.py::test_no_cuda_sync_inside_an_update tests/test_slr.py::test_torch_on_cuda_matches_cpu \
	tests/test_train_async_checkpoint.py::test_a_cuda_snapshot_is_a_pinned_host_copy \
	tests/test_sources_vectorized.py::test_set_sorted_lookup_in_the_attention_on_cuda
gpu-tests:
	$(GPU_PY) -m pytest -q -rs -s -p no:cacheprovider $(GPU_TESTS)

clean:
	rm -rf build
