# Release checks, run by `make test` (so CI runs them):
#   make docs            the documentation site: mkdocs build --strict → build/site/
#   make install-check   what `pip install synprep` gives: a fresh venv with CPU torch and `pip install .` (no
#                        extras, no dev tools), then tests/installed_check.py runs the main job with its console
#                        script on real data, and each extra's feature without it (the one-line message).
# The venv's dependencies are installed again only when what decides them changes (pyproject.toml, this file,
# the torch line: the stamp is their hash); synprep itself is reinstalled from the checkout on every run, so
# the installed code is always the code under test. A clean clone (CI) has no venv and builds it.
INSTALL_CHECK ?= build/install-check
CORE_VENV     := $(INSTALL_CHECK)/core
CORE_HASH     := $(shell cat pyproject.toml pipelines/release.mk | sha256sum | cut -c1-12)-$(subst =,,$(TORCH))
CORE_STAMP    := $(CORE_VENV)/.deps-$(CORE_HASH)

.PHONY: docs install-check

# (a plugin's banner about a future MkDocs 2 is silenced: it is no warning of this site's)
docs: setup
	DISABLE_MKDOCS_2_WARNING=true $(PY) -m mkdocs build --strict --quiet

$(CORE_STAMP):
	rm -rf $(CORE_VENV)
	mkdir -p $(INSTALL_CHECK)
	$(PYTHON) -m venv $(CORE_VENV)
	log=$(INSTALL_CHECK)/core.log
	{ $(CORE_VENV)/bin/python -m pip install -q "$(TORCH)" && $(CORE_VENV)/bin/python -m pip install -q . ; } > $$log 2>&1 \
	  || { tail -40 $$log; exit 1; }
	touch $(CORE_STAMP)

install-check: setup $(CORE_STAMP)
	$(CORE_VENV)/bin/python -m pip install -q --no-deps --force-reinstall . > $(INSTALL_CHECK)/core.log 2>&1 \
	  || { tail -40 $(INSTALL_CHECK)/core.log; exit 1; }
	$(CORE_VENV)/bin/python -m pip check
	SYNPREP_CORE_VENV=$(CORE_VENV) $(PY) -m pytest -q -p no:cacheprovider tests/installed_check.py
	echo "install-check: pip install . (no extras) runs the main job; each extra's absence is one line"
