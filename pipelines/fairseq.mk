# Real fairseq for the export round-trip test: its own Python 3.11 venv, built once and reused while
# pipelines/fairseq-requirements.txt is unchanged. It lives outside the clone (~/.cache/synprep/) so that
# fresh clones on one machine (CI) share it; FAIRSEQ_VENV=path overrides the place.
FAIRSEQ_REQ    := pipelines/fairseq-requirements.txt
FAIRSEQ_HASH   := $(shell sha256sum $(FAIRSEQ_REQ) | cut -c1-12)
FAIRSEQ_PYTHON ?= $(shell command -v python3.11 || command -v python3)
FAIRSEQ_VENV   ?= $(HOME)/.cache/synprep/venv-fairseq-$(FAIRSEQ_HASH)
FAIRSEQ_STAMP  := $(FAIRSEQ_VENV)/.synprep-fairseq-ready
export SYNPREP_FAIRSEQ_VENV := $(FAIRSEQ_VENV)

.PHONY: fairseq-venv

fairseq-venv: $(FAIRSEQ_STAMP)

# Built at its final path (venvs are not relocatable) under a lock, so that two clones never build it at
# once; the ready-stamp is written last, so an interrupted build is thrown away and redone.
$(FAIRSEQ_STAMP): $(FAIRSEQ_REQ)
	@mkdir -p $(dir $(FAIRSEQ_VENV))
	exec 9> $(FAIRSEQ_VENV).lock
	flock 9
	if [ -f $(FAIRSEQ_STAMP) ]; then exit 0; fi
	rm -rf $(FAIRSEQ_VENV)
	$(FAIRSEQ_PYTHON) -m venv $(FAIRSEQ_VENV)
	log=$(FAIRSEQ_VENV)/pip.log
	pip() { $(FAIRSEQ_VENV)/bin/python -m pip "$$@" >> $$log 2>&1 || { tail -50 $$log; exit 1; }; }
	echo "building the fairseq venv $(FAIRSEQ_VENV) (about 10 minutes on 2 cores, once)"
	pip install -q --upgrade pip
	pip install -q $$(grep -E '^torch' $(FAIRSEQ_REQ))
	pip install -q $$(grep -E '^(numpy|cython|setuptools|wheel)' $(FAIRSEQ_REQ))
	pip install -q --no-build-isolation $$(grep -E '^fairseq' $(FAIRSEQ_REQ)) -c <(grep -E '^(torch|numpy)' $(FAIRSEQ_REQ))
	$(FAIRSEQ_VENV)/bin/python -c "import fairseq, torch, numpy; print('fairseq', fairseq.__version__, 'torch', torch.__version__, 'numpy', numpy.__version__)"
	touch $(FAIRSEQ_STAMP)
