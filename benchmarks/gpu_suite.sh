#!/usr/bin/env bash
# The GPU check in one go: one JSON object per figure on stdout, in under 9 minutes
# on one H100/H200 with ../shared/gpu/make_bundle.sh's bundle.
#
#   on the GPU machine, from the project root:  source .gpu/unpack.sh && bash benchmarks/gpu_suite.sh
#   here, tiny sizes (the suite's test):         bash benchmarks/gpu_suite.sh --device cpu --small
#
# Options go to benchmarks/gpu_suite.py (--device cuda|cpu, --small, --shared DIR, --only parse annotate trainer);
# data from $SHARED (set by unpack.sh), else ../shared. Figures: docs/benchmarks.md (benchmarks/results/).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
# $PY if set, else the project's .venv, else python3 (the GPU machine: the bundle's PYTHONPATH)
if [ -z "${PY:-}" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=$(command -v python3 || command -v python); fi
fi
# Bytecode as a pip-installed environment has it. The bundle installs its wheels with --no-compile, and where
# Python writes no bytecode (PYTHONDONTWRITEBYTECODE) every process of a figure compiled those imports from source:
# on an H100 machine a fresh process took 5.75 s for `import torch` and 4.3 s for `import
# synprep.cli` (1.6 s and 0.4 s on the 2-core machine, whose packages have their bytecode). Then the bytecode
# goes to a cache of its own (PYTHONPYCACHEPREFIX), written by the first process that imports each module.
if "$PY" - <<'CHECK'
import importlib.util, os, sys
def compiled(name):
    spec = importlib.util.find_spec(name)
    d = os.path.join(os.path.dirname(spec.origin), "__pycache__")
    return os.path.isdir(d) and any(f.endswith(".pyc") for f in os.listdir(d))
sys.exit(0 if sys.flags.dont_write_bytecode and not all(map(compiled, ("torch", "numpy", "stanza", "nltk"))) else 1)
CHECK
then
  export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-${TMPDIR:-/tmp}/synprep-pycache}"
  unset PYTHONDONTWRITEBYTECODE
  echo "gpu_suite: packages without bytecode, and none written: caching it in $PYTHONPYCACHEPREFIX" >&2
fi
exec "$PY" benchmarks/gpu_suite.py "$@"
