"""Peak memory of ``synprep show``, ``check`` and ``train`` on a hostile shard,
and of ``load_model`` (what ``translate`` runs) on a checkpoint whose config was edited.

    python benchmarks/hostile_rss.py [--cases shards,bomb,heap,checkpoint,bounds,longwords]

A valid synthetic folder whose first shard is made to declare 2^28 (then 2^22) pairs: ``/line`` and
every ``/offsets/AXIS`` resized without writing data (a file of ~17 KB), the manifest re-sealed so
only the declared shapes give it away (tests/fuzz_strategies.py:declare_huge). Each command runs in
its own child; prints, per command, the exit status, the child's peak RSS (MB, ``ru_maxrss`` of
``RUSAGE_CHILDREN``) and its error line (else its last stderr line), as JSON.

Bomb case: the first shard's ``/sent_start`` replaced by real gzip
chunks of zeros (~1000:1, tests/fuzz_strategies.py:deflate_bomb), the layout kept consistent and the
manifest re-sealed, declaring 16 MiB more than ``MAX_SHARD_BYTES`` (refused), then 8 MiB less (read
whole: the most a shard can cost).

Heap case: a byte range of the first shard's attribute heap shifted by one, keeping its size, the manifest
re-sealed (tests/fuzz_strategies.py:shift_heap_range): HDF5 2.0 would load the heap forever; each reader
refuses it first, in one line.

Bounds case: ``pipeline --split valid`` (stanza, package ``synprep``) on three
lines, one holding a 100 KB token; ``annotate --parser conllu`` on an imported sentence of 100k words;
``show``/``export``/``train`` on a shard whose heads were damaged and the manifest re-sealed.

Cache case (``cache_entry``): ``synprep parse`` of one line whose entry in a parse cache (filled by a real
parse) is replaced by a deflate bomb of 0.1, 0.5 and 1 MB (a ``heads`` list of ~1000x as many bytes).

Long-words case: ``synprep parse`` (stanza, package ``synprep``, en) on ``--parse-lines`` lines of 250
words of 999 random base64-ish characters (letters and digits, made on the fly), then on lines each of 249
short words and one such word (the character models pad every word of a batch to its longest), and
``pipeline --split valid`` on ``--pipeline-lines`` lines of long words (the source side, de, is parsed).
Each child's peak RSS (``ru_maxrss``) and the summed RSS of its process tree, sampled every 0.1 s; a tree
past ``--cap-mb`` is killed (``killed_at_cap``) so the machine's memory is never exhausted.

Checkpoint case: a real checkpoint of a d_model = 256 model (vocabulary 1000, one layer each side),
then copies whose ``config.max_positions`` alone is edited (the sinusoidal position table is not
stored, so nothing else gives the edit away); ``load_model`` runs on each in its own child.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from builders import small_folder  # noqa: E402
from fuzz_strategies import declare_huge, deflate_bomb, reseal, shift_heap_range  # noqa: E402

MEASURE = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
           "print(json.dumps([p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, "
           "next((x for x in p.stderr.splitlines() if x.startswith(('synprep: error', 'synprep check'))), "
           "(p.stderr.strip().splitlines() or [''])[-1])[:300]]))")


#: as MEASURE, the message being the cache's warning (``... ignored ...``) or the error line
CACHE_MEASURE = MEASURE.replace("x.startswith(('synprep: error', 'synprep check'))",
                                "'ignored' in x or x.startswith('synprep: error')")

LOAD = ("import sys; from synprep.errors import SynprepError; from synprep.train.decode import load_model\n"
        "try:\n    load_model(sys.argv[1])\nexcept SynprepError as e:\n    sys.exit(f'synprep: error: {e}')")


def _measure(args: list[str]) -> tuple[int, int, str]:
    """(exit status, peak RSS in MB, first stderr line) of ``args`` run in a child."""
    r = subprocess.run([sys.executable, "-c", "import json; " + MEASURE, *args], capture_output=True, text=True,
                       check=True)
    status, peak, line = json.loads(r.stdout)
    return status, peak, line


def checkpoints(tmp: Path) -> dict:
    from synprep.train.checkpoint import save_checkpoint
    from synprep.train.config import load_preset, with_overrides
    from synprep.train.model import Seq2Seq

    cfg = with_overrides(load_preset("tiny"), {"d_model": 256, "ffn_dim": 256, "gate_hidden": 128,
                                               "encoder_layers": 1, "decoder_layers": 1})
    symbols = ["<s>", "<pad>", "</s>", "<unk>"] + [f"w{i}" for i in range(996)]
    ck = {"config": cfg.to_dict(), "symbols": symbols, "signature": "hostile",
          "model": Seq2Seq(cfg, len(symbols)).state_dict()}
    out = {}
    for n in (cfg.max_positions, 1 << 14, 1 << 16, 1 << 20):
        path = tmp / f"checkpoint_p{n}.pt"
        save_checkpoint(path, {**ck, "config": {**ck["config"], "max_positions": n}})
        status, peak, line = _measure([sys.executable, "-c", LOAD, str(path)])
        out[f"load_model, d_model 256, max_positions {n}, {path.stat().st_size} B checkpoint"] = {
            "exit": status, "peak_rss_mb": peak, "message": line}
    return out


def _readers_on(base: Path, run: Path, label: str) -> dict:
    """Peak RSS and exit status of ``show``, ``check`` and ``train`` on the folder ``base`` (then removed)."""
    size = (base / "train.00000.h5").stat().st_size
    out = {}
    for name, args in (("show", ["show", str(base), "--split", "train", "--index", "0"]),
                       ("check", ["check", str(base)]),
                       ("train", ["train", "--shards", str(base), "--preset", "tiny", "--out", str(run),
                                  "--max-steps", "1"])):
        status, peak, line = _measure([sys.executable, "-m", "synprep", *args])
        out[f"{name}, {label}, {size} B shard"] = {"exit": status, "peak_rss_mb": peak, "message": line}
    shutil.rmtree(base)
    return out


def _damaged(tmp: str, cases: list[tuple[str, int]], damage) -> dict:
    """For each (label, n): a small valid folder whose first train shard ``damage(path, n)`` made
    hostile (manifest re-sealed), measured by :func:`_readers_on`."""
    out = {}
    for label, n in cases:
        base = Path(tmp) / f"case{n}"
        small_folder(base)
        damage(base / "train.00000.h5", n)
        reseal(base)
        out.update(_readers_on(base, Path(tmp) / f"run{n}", label))
    return out


def shards(tmp: str) -> dict:
    return _damaged(tmp, [(f"n_pairs 2^{n.bit_length() - 1}", n) for n in (1 << 28, 1 << 22)], declare_huge)


def heap(tmp: str) -> dict:
    return _damaged(tmp, [("attribute heap range shifted by one", 0)], lambda p, n: shift_heap_range(p))


def bombs(tmp: str) -> dict:
    from synprep.constants import MAX_SHARD_BYTES

    cases = [(f"deflate bomb {label} MAX_SHARD_BYTES ({n} values)", n)
             for label, n in (("16 MiB above", MAX_SHARD_BYTES + (16 << 20)), ("8 MiB below", MAX_SHARD_BYTES - (8 << 20)))]
    return _damaged(tmp, cases, deflate_bomb)


def bounds(tmp: str) -> dict:
    import h5py
    import numpy as np

    from synprep.text.bpe import apply_bpe_stream, learn_bpe
    from synprep.vocab import Vocab

    t = Path(tmp) / "bounds"
    t.mkdir()
    sample = ROOT / "sample_data"
    learn_bpe([sample / "train.de", sample / "train.en"], 200, t / "codes")
    lines = (sample / "train.de").read_text().splitlines() + (sample / "train.en").read_text().splitlines()
    (t / "bpe").write_text("\n".join(apply_bpe_stream(lines, t / "codes")) + "\n")
    Vocab.build([t / "bpe"]).save(t / "dict.txt")
    token = "".join(chr(97 + (i * 7) % 26) for i in range(100_000))
    (t / "v.de").write_text(f"Das ist gut .\nEin {token} Haus .\nHallo Welt .\n")
    (t / "v.en").write_text("That is good .\nA house .\nHello world .\n")
    stanza = os.environ.get("SYNPREP_SHARED", str(ROOT.parent / "shared")) + "/data/stanza_resources"
    out = {}
    status, peak, line = _measure([sys.executable, "-m", "synprep", "pipeline", "--split", "valid", "--src",
                                   str(t / "v.de"), "--tgt", str(t / "v.en"), "-s", "de", "-t", "en", "--out",
                                   str(t / "out"), "--codes", str(t / "codes"), "--vocab", str(t / "dict.txt"),
                                   "--stanza-dir", stanza, "--stanza-package", "synprep", "--no-cache"])
    out["pipeline --split valid, a 100 KB token (stanza)"] = {"exit": status, "peak_rss_mb": peak, "message": line}
    n = 100_000
    (t / "s").write_text(" ".join(f"w{j % 10}" for j in range(n)) + "\nw0 w1\n")
    (t / "t").write_text("a\nb\n")
    (t / "c.conllu").write_text("".join(f"{j + 1}\tw{j % 10}\t_\tX\t_\t_\t{0 if j == 0 else 1}\t{'dep' if j else 'root'}\t_\t_\n"
                                        for j in range(n)) + "\n1\tw0\t_\tX\t_\t_\t0\troot\t_\t_\n"
                                "2\tw1\t_\tX\t_\t_\t1\tdep\t_\t_\n\n")
    status, peak, line = _measure([sys.executable, "-m", "synprep", "annotate", "--src", str(t / "s"), "--tgt",
                                   str(t / "t"), "--parser", "conllu", "--conllu", str(t / "c.conllu"), "-s", "de",
                                   "-t", "en", "--out", str(t / "imp")])
    out["annotate --parser conllu, a 100k-word imported sentence"] = {"exit": status, "peak_rss_mb": peak,
                                                                      "message": line}
    base = t / "damaged"
    small_folder(base, drop_every=0)
    with h5py.File(base / "train.00001.h5", "r+") as f:
        h = f["heads"][()]
        h[int(f["offsets/word"][1]) + 1] = np.iinfo(h.dtype).max
        f["heads"][...] = h
    reseal(base)
    for name, args in (("show", ["show", str(base), "--split", "train", "--index", "5"]),
                       ("export", ["export", str(base), "--format", "fairseq", "--to", str(t / "fs")]),
                       ("train", ["train", "--shards", str(base), "--preset", "tiny", "--out", str(t / "run"),
                                  "--max-steps", "1"])):
        status, peak, line = _measure([sys.executable, "-m", "synprep", *args])
        out[f"{name}, a re-sealed shard with a head out of range"] = {"exit": status, "peak_rss_mb": peak,
                                                                     "message": line}
    return out


def _heads_bomb(words: list[str], size: int) -> bytes:
    """A parse-cache value for ``words`` whose ``heads`` list holds about ``size`` bytes of deflated ``0,``
    (~1000:1: a list of that many Python ints once read, as a poisoned cache entry would)."""
    import zlib

    n = len(words)
    z = zlib.compressobj(9)
    head = json.dumps({"words": words, "upos": ["X"] * n, "deprels": ["dep"] * n, "tree": None,
                       "tree_source": None, "ldd": None})[:-1] + ', "heads": [0'
    out = [z.compress(head.encode())]
    chunk = b",0" * (1 << 19)
    while sum(map(len, out)) < size:
        out.append(z.compress(chunk))
    return b"".join(out) + z.compress(b"]}") + z.flush()


def cache_entry(tmp: str, code: Path = ROOT, sizes: tuple[int, ...] = (100_000, 500_000, 1_000_000)) -> dict:
    """``synprep parse`` of one line whose parse-cache entry (in a cache a real parse filled) was replaced by
    a deflate bomb of each of ``sizes`` bytes: peak RSS, exit status, and the cache warning. ``code``: the
    checkout whose synprep runs (``PYTHONPATH``), to compare one before and after a change."""
    import sqlite3

    t = Path(tmp) / "cache_entry"
    t.mkdir()
    (t / "in.de").write_text("Das ist gut .\n", encoding="utf-8")
    stanza = os.environ.get("SYNPREP_SHARED", str(ROOT.parent / "shared")) + "/data/stanza_resources"
    args = [sys.executable, "-m", "synprep", "parse", "-l", "de", "--stanza-dir", stanza, "--stanza-package",
            "synprep", "--cache", str(t / "c.sqlite"), "-i", str(t / "in.de"), "-o", str(t / "out.conllu")]
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = {}

    def measure(label: str) -> None:
        r = subprocess.run([sys.executable, "-c", "import json; " + CACHE_MEASURE, *args], capture_output=True,
                           text=True, check=True, env=env)
        status, peak, line = json.loads(r.stdout)
        out[label] = {"exit": status, "peak_rss_mb": peak, "message": line}

    measure("parse, one line, fresh cache (the cache filled)")
    measure("parse, one line, from the cache")
    db = sqlite3.connect(t / "c.sqlite")
    (key,) = db.execute("SELECT key FROM parses").fetchone()
    for size in sizes:
        blob = _heads_bomb(["Das", "ist", "gut", "."], size)
        db.execute("UPDATE parses SET value = ? WHERE key = ?", (blob, key))
        db.commit()
        measure(f"parse, one line, its cache entry a {len(blob)} B deflate bomb")
    db.close()
    return out


def _measure_capped(args: list[str], cap_mb: int) -> dict:
    """Run ``python -m synprep ARGS`` (stdin from /dev/null unless ``<FILE`` ends ``args``) in its own
    session; its exit status, ``ru_maxrss`` (MB), the peak summed RSS of its process tree (MB, sampled),
    whether it was killed at ``cap_mb`` and its error line (else its last stderr line)."""
    import signal
    import threading

    import psutil

    stdin = None
    if args and args[-1].startswith("<"):
        stdin, args = args[-1][1:], args[:-1]
    with tempfile.TemporaryFile() as err, open(stdin or os.devnull, "rb") as inp:
        p = subprocess.Popen([sys.executable, "-m", "synprep", *args], stdin=inp, stdout=subprocess.DEVNULL,
                             stderr=err, start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        box = {"peak": 0, "killed": False}
        done = threading.Event()

        def sample() -> None:
            root = psutil.Process(p.pid)
            while not done.is_set():
                try:
                    total = sum(q.memory_info().rss for q in [root, *root.children(recursive=True)])
                except psutil.Error:
                    total = 0
                box["peak"] = max(box["peak"], total)
                if total > cap_mb << 20:
                    box["killed"] = True
                    os.killpg(p.pid, signal.SIGKILL)
                    return
                done.wait(0.1)

        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        watcher.join()
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
    line = next((x for x in lines if x.startswith("synprep: error")), lines[-1] if lines else "")
    return {"exit": p.returncode, "peak_rss_mb": usage.ru_maxrss // 1024, "tree_peak_mb": box["peak"] >> 20,
            "killed_at_cap": box["killed"], "message": line[:300]}


def long_word_lines(n: int, *, seed: int = 0, one_per_line: bool = False) -> list[str]:
    """``n`` lines of 250 words of 999 random letters and digits (``one_per_line``: 249 short words and one
    such word in the middle)."""
    import random
    import string

    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits

    def word() -> str:
        return "".join(rng.choices(alphabet, k=999))

    if one_per_line:
        return [" ".join([f"w{j % 10}" for j in range(124)] + [word()] + [f"w{j % 10}" for j in range(125)])
                for _ in range(n)]
    return [" ".join(word() for _ in range(250)) for _ in range(n)]


def _codes_and_vocab(t: Path) -> tuple[Path, Path]:
    """BPE codes (200 merges) and a dictionary learnt from sample_data's train split, in ``t``."""
    from synprep.text.bpe import apply_bpe_stream, learn_bpe
    from synprep.vocab import Vocab

    sample = ROOT / "sample_data"
    learn_bpe([sample / "train.de", sample / "train.en"], 200, t / "codes")
    lines = (sample / "train.de").read_text().splitlines() + (sample / "train.en").read_text().splitlines()
    (t / "bpe").write_text("\n".join(apply_bpe_stream(lines, t / "codes")) + "\n")
    Vocab.build([t / "bpe"]).save(t / "dict.txt")
    return t / "codes", t / "dict.txt"


def longwords(tmp: str, parse_lines: int, pipeline_lines: int, cap_mb: int) -> dict:
    t = Path(tmp) / "longwords"
    t.mkdir()
    stanza = os.environ.get("SYNPREP_SHARED", str(ROOT.parent / "shared")) + "/data/stanza_resources"
    parse = ["parse", "-l", "en", "--stanza-dir", stanza, "--stanza-package", "synprep", "--no-cache"]
    out = {}
    (t / "short.txt").write_text("This is a short sentence .\n")
    out["parse, one short line"] = _measure_capped([*parse, f"<{t / 'short.txt'}"], cap_mb)
    for n in sorted({1, parse_lines}):
        (t / "long.txt").write_text("\n".join(long_word_lines(n)) + "\n")
        out[f"parse, {n} lines of 250 words of 999 characters ({(t / 'long.txt').stat().st_size} B)"] = (
            _measure_capped([*parse, f"<{t / 'long.txt'}"], cap_mb))
    n = 4 * parse_lines
    (t / "one.txt").write_text("\n".join(long_word_lines(n, one_per_line=True)) + "\n")
    out[f"parse, {n} lines of 249 short words and one of 999 characters"] = (
        _measure_capped([*parse, f"<{t / 'one.txt'}"], cap_mb))
    if pipeline_lines:
        codes, vocab = _codes_and_vocab(t)
        (t / "v.de").write_text("\n".join(long_word_lines(pipeline_lines, seed=1)) + "\n")
        (t / "v.en").write_text("\n".join(long_word_lines(pipeline_lines, seed=2)) + "\n")
        out[f"pipeline --split valid, {pipeline_lines} lines of 250 words of 999 characters a side "
            f"({(t / 'v.de').stat().st_size} B)"] = _measure_capped(
            ["pipeline", "--split", "valid", "--src", str(t / "v.de"), "--tgt", str(t / "v.en"), "-s", "de", "-t",
             "en", "--out", str(t / "out"), "--codes", str(codes), "--vocab", str(vocab), "--no-language-check",
             "--stanza-dir", stanza, "--stanza-package", "synprep", "--no-cache"], cap_mb)
    return out


def main() -> int:
    ap = arg_parser(__doc__, whole=True)
    ap.add_argument("--cases", default="shards,bomb,heap,checkpoint,bounds,cache,longwords",
                    help="comma-separated subset of shards,bomb,heap,checkpoint,bounds,cache,longwords")
    ap.add_argument("--parse-lines", type=int, default=4, help="longwords: lines of long words for parse")
    ap.add_argument("--pipeline-lines", type=int, default=40,
                    help="longwords: lines of long words a side for pipeline (0: no pipeline run)")
    ap.add_argument("--cap-mb", type=int, default=6144, help="longwords: kill a child whose tree passes this")
    opts = ap.parse_args()
    cases = opts.cases.split(",")
    out = {}
    with tempfile.TemporaryDirectory(prefix="synprep-hostile-") as tmp:
        if "checkpoint" in cases:
            out.update(checkpoints(Path(tmp)))
        if "shards" in cases:
            out.update(shards(tmp))
        if "bomb" in cases:
            out.update(bombs(tmp))
        if "heap" in cases:
            out.update(heap(tmp))
        if "bounds" in cases:
            out.update(bounds(tmp))
        if "cache" in cases:
            out.update(cache_entry(tmp))
        if "longwords" in cases:
            out.update(longwords(tmp, opts.parse_lines, opts.pipeline_lines, opts.cap_mb))
    emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
