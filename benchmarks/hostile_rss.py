"""Peak memory of ``synprep show``, ``check`` and ``train`` on a hostile shard (issue 10, item 6).

    python benchmarks/hostile_rss.py

A valid synthetic folder whose first shard is made to declare 2^28 (then 2^22) pairs: ``/line`` and
every ``/offsets/AXIS`` resized without writing data (a file of ~17 KB), the manifest re-sealed so
only the declared shapes give it away (tests/fuzz_strategies.py:declare_huge). Each command runs in
its own child; prints, per command, the exit status, the child's peak RSS (MB, ``ru_maxrss`` of
``RUSAGE_CHILDREN``) and its last stderr line, as JSON.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fuzz_strategies import declare_huge, reseal  # noqa: E402

from synprep.shards.synthetic import write_folder  # noqa: E402

MEASURE = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
           "print(json.dumps([p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, "
           "(p.stderr.strip().splitlines() or [''])[0][:300]]))")


def main() -> int:
    out = {}
    with tempfile.TemporaryDirectory(prefix="synprep-hostile-") as tmp:
        for n in (1 << 28, 1 << 22):
            base = Path(tmp) / f"n{n}"
            write_folder(base, {"train": 9, "valid": 3}, shard_size=4, seed=1, words=6, tgt_len=5, drop_every=4)
            declare_huge(base / "train.00000.h5", n)
            reseal(base)
            size = (base / "train.00000.h5").stat().st_size
            for name, args in (("show", ["show", str(base), "--split", "train", "--index", "0"]),
                               ("check", ["check", str(base)]),
                               ("train", ["train", "--shards", str(base), "--preset", "tiny", "--out",
                                          str(Path(tmp) / f"run{n}"), "--max-steps", "1"])):
                r = subprocess.run([sys.executable, "-c", "import json; " + MEASURE, sys.executable, "-m", "synprep",
                                    *args], capture_output=True, text=True, check=True)
                status, peak, line = json.loads(r.stdout)
                out[f"{name}, n_pairs 2^{n.bit_length() - 1}, {size} B shard"] = {
                    "exit": status, "peak_rss_mb": peak, "message": line}
            shutil.rmtree(base)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
