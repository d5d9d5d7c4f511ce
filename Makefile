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

.PHONY: setup sample test lint typecheck bench iwslt14 iwslt14-test clean gpu-suite

setup: $(STAMP)

# pip's log goes to .venv/pip.log and is shown only when an install fails.
PIPLOG = > $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip $(PIPLOG)
	$(PY) -m pip install -q "$(TORCH)" $(PIPLOG)
	$(PY) -m pip install -q -e '.[dev]' $(PIPLOG)
	touch $(STAMP)

lint: setup
	$(PY) -m ruff check synprep tests benchmarks

typecheck: setup
	$(PY) -m mypy

# fairseq-venv (pipelines/fairseq.mk): real fairseq for the export test, built once and reused;
# docs and install-check (pipelines/release.mk): mkdocs --strict, pip install . / .[all] in fresh venvs.
test: lint typecheck docs install-check fairseq-venv
	$(PY) -m pytest

include pipelines/sample.mk
include pipelines/iwslt14.mk
include pipelines/pud.mk
include pipelines/multi30k.mk
include pipelines/fairseq.mk
include pipelines/release.mk

# the GPU check in one go (benchmarks/gpu_suite.sh; on the GPU machine after `source .gpu/unpack.sh`):
# one JSON object per figure. DEVICE=cpu SMALL=--small for the tiny CPU run the test suite makes.
DEVICE ?= cuda
SMALL  ?=
gpu-suite:
	PY=$(PY) bash benchmarks/gpu_suite.sh --device $(DEVICE) $(SMALL)

clean:
	rm -rf build
