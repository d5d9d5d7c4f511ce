#!/usr/bin/env bash
# The GPU check in one go (issue 17 item 6): one JSON object per figure on stdout, in under 9 minutes
# on one H100/H200 with ../shared/gpu/make_bundle.sh's bundle.
#
#   on the GPU machine, from the project root:  source .gpu/unpack.sh && bash benchmarks/gpu_suite.sh
#   here, tiny sizes (the suite's test):         bash benchmarks/gpu_suite.sh --device cpu --small
#
# Options go to benchmarks/gpu_suite.py (--device cuda|cpu, --small, --shared DIR, --only parse annotate trainer);
# data from $SHARED (set by unpack.sh), else ../shared. Figures and method: docs/parse.md "GPU check".
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
# $PY if set, else the project's .venv, else python3 (the GPU machine: the bundle's PYTHONPATH)
if [ -z "${PY:-}" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=$(command -v python3 || command -v python); fi
fi
exec "$PY" benchmarks/gpu_suite.py "$@"
