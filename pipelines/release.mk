# Release checks, run by `make test` (so CI runs them):
#   make docs            the documentation site: mkdocs build --strict → build/site/
#   make install-check   `pip install .` and `pip install '.[all]'` into fresh venvs (build/install-check/),
#                        then the installed `synprep` runs; the core install has no matplotlib/pyarrow and
#                        says which extra to install.
INSTALL_CHECK ?= build/install-check

.PHONY: docs install-check

docs: setup
	$(PY) -m mkdocs build --strict --quiet

install-check: setup
	rm -rf $(INSTALL_CHECK)
	mkdir -p $(INSTALL_CHECK)
	for kind in core all; do
	  venv=$(INSTALL_CHECK)/$$kind
	  log=$(INSTALL_CHECK)/$$kind.log
	  spec=.; if [ $$kind = all ]; then spec='.[all]'; fi
	  $(PYTHON) -m venv $$venv
	  { $$venv/bin/python -m pip install -q "$(TORCH)" && $$venv/bin/python -m pip install -q "$$spec"; } > $$log 2>&1 \
	    || { tail -40 $$log; exit 1; }
	  (cd $(INSTALL_CHECK) && $$kind/bin/synprep --version && $$kind/bin/synprep info --json > $$kind.info.json)
	done
	(cd $(INSTALL_CHECK) && ! core/bin/python -c "import matplotlib" 2>/dev/null && ! core/bin/python -c "import pyarrow" 2>/dev/null)
	(cd $(INSTALL_CHECK) && all/bin/python -c "import matplotlib, pyarrow, datasets, mkdocs, dask")
	echo "install-check: pip install . and pip install '.[all]' work in fresh venvs"
