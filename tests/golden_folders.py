"""Whole output folders of every route through the data side, made small, and the sha256 of each file.

:func:`build` makes, under one folder, the output of each route (:data:`ROUTES`) on the first lines of
sample_data's train and valid splits (de→en; CoNLL-U parses from ``../shared/data/ud``), with real
stanza (the offline models, package ``synprep``); one parse cache serves them all (the bytes do not
depend on what the cache holds: test_resume.py). :func:`digests` reads every file's sha256.
``tests/golden_folders.json`` holds the digests the code gave when they were recorded
(``python tests/golden_folders.py``); test_golden_folders.py compares a fresh build with it, so a
change that moves code around without changing behaviour keeps every byte.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repository's tests/ and root on the path
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from helpers import SAMPLE_DATA, SHARED_DATA, STANZA_DIR, run_cli

#: the recorded digests, relative path → sha256 per route
GOLDEN = Path(__file__).with_name("golden_folders.json")
#: every route built, in order (a later one may read an earlier one's folder)
ROUTES = ("raw", "raw_valid", "tokenized", "trees", "conllu", "spm", "hf", "annotate_parse_src", "parts",
          "export_parquet", "export_hf", "export_fairseq", "export_factors")
#: Every file of every folder is compared (but :data:`SOURCE_COPIES`), the empty lock files included: none holds a time (the shards are
#: written without HDF5's object times, the manifests and export records hold no dates). The one place a
#: folder holds an absolute path is ``inputs.json`` (the path each input was read from, beside its digest):
#: :func:`digests` reads it with the build folder replaced by ``<ROOT>``, so it is compared too.
ROOT_MARK = b"<ROOT>"
#: what is left out, and why: ``export --format fairseq`` copies synprep's own source into the export (its
#: ``--user-dir`` plugin and the vendored modules the model imports), so those bytes change with every edit
#: of the library's code, which is what this test lets move; the export's data files are compared
SOURCE_COPIES = ("synprep_fairseq/",)
N_TRAIN, N_VALID = 30, 12
#: a small folder: few merges, several shards, small parser batches
COMMON = ("-s", "de", "-t", "en", "--shard-size", "8", "--batch-size", "8", "-j", "1")


def _head(src: Path, dest: Path, n: int) -> Path:
    dest.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")
    return dest


def _stanza(cache: Path) -> list[str]:
    return ["--stanza-dir", str(STANZA_DIR), "--stanza-package", "synprep", "--cache", str(cache)]


def _hf_tokenizer(path: Path, text: list[str]) -> Path:
    """A byte-level BPE ``tokenizer.json`` trained with the tokenizers library on ``text``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(path))
    return path


def _pud(lang: str, n: int) -> list[str]:
    """The first ``n`` sentences of a PUD treebank (the same sentences in every language)."""
    return (SHARED_DATA / "ud" / f"{lang}_pud-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")[:n]


def _texts(blocks: list[str]) -> str:
    return "".join(f"{x[len('# text = '):]}\n" for b in blocks for x in b.splitlines() if x.startswith("# text = "))


def _flat_trees(tokens: Path, dest: Path) -> Path:
    """One flat bracketed tree per line of Moses tokens (each word under X)."""
    lines = tokens.read_text(encoding="utf-8").splitlines()
    dest.write_text("".join(f"(ROOT (S {' '.join(f'(X {w})' for w in line.split())}))\n" for line in lines),
                    encoding="utf-8")
    return dest


def build(root: Path) -> dict[str, Path]:
    """Every route's output folder under ``root`` (route → folder)."""
    inp = root / "inputs"
    inp.mkdir(parents=True)
    cache = root / "cache.sqlite"
    train = {s: _head(SAMPLE_DATA / f"train.{s}", inp / f"train.{s}", N_TRAIN) for s in ("de", "en")}
    valid = {s: _head(SAMPLE_DATA / f"valid.{s}", inp / f"valid.{s}", N_VALID) for s in ("de", "en")}
    out = {r: root / r for r in ROUTES}

    def pipeline(dest: Path, *extra: str, src: Path = train["de"], tgt: Path = train["en"]) -> None:
        bpe = [] if "--subword" in extra or "--split" in extra else ["--merges", "200"]
        run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "--out", str(dest), *COMMON, *bpe, *_stanza(cache),
                *extra)

    pipeline(out["raw"])
    raw_text = out["raw"] / "text"
    shutil.copytree(out["raw"], out["raw_valid"])  # the raw folder, then its later split
    pipeline(out["raw_valid"], "--split", "valid", src=valid["de"], tgt=valid["en"])
    # the raw run's tokenized text as --tokenized input (the cleaned lines: every one is kept)
    pipeline(out["tokenized"], "--tokenized", "--lowercase", src=raw_text / "train.clean.de",
             tgt=raw_text / "train.clean.en")
    trees = _flat_trees(raw_text / "train.clean.de", inp / "trees.txt")
    pipeline(out["trees"], "--tokenized", "--trees", str(trees), src=raw_text / "train.clean.de",
             tgt=raw_text / "train.clean.en")
    gold, gold_tgt = inp / "gold.conllu", inp / "gold.de"  # English parses, the German sentences as the target
    gold.write_text("\n\n".join(_pud("en", 16)) + "\n\n", encoding="utf-8")
    gold_tgt.write_text(_texts(_pud("de", 16)), encoding="utf-8")
    run_cli("pipeline", "--parser", "conllu", "--conllu", str(gold), "--tgt", str(gold_tgt), "-s", "en",
            "-t", "de", "--merges", "100", "--shard-size", "8", "--out", str(out["conllu"]))
    pipeline(out["spm"], "--subword", "spm", "--vocab-size", "150")
    hf = _hf_tokenizer(inp / "tokenizer.json", [x for s in ("de", "en")
                                                 for x in train[s].read_text(encoding="utf-8").splitlines()])
    pipeline(out["hf"], "--subword", "hf", "--hf-tokenizer", str(hf))
    run_cli("annotate", "--src", str(raw_text / "train.bpe.de"), "--tgt", str(raw_text / "train.bpe.en"),
            "--parse-src", str(raw_text / "train.clean.de"), "--out", str(out["annotate_parse_src"]), "-s", "de",
            "-t", "en", "--shard-size", "8", "--batch-size", "8", "-j", "1", *_stanza(cache))
    pipeline(out["parts"], "--prepare-only")
    for i in (1, 2, 3):
        pipeline(out["parts"], "--part", f"{i}/3")
    pipeline(out["parts"], "--merge-parts")
    for fmt in ("parquet", "hf", "fairseq", "factors"):
        run_cli("export", str(out["raw_valid"]), "--format", fmt, "--to", str(out[f"export_{fmt}"]))
    return out


def digests(folder: Path, root: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (relative path → hex) but :data:`SOURCE_COPIES`, ``root`` (where it
    was built) read as :data:`ROOT_MARK`."""
    where = str(root).encode("utf-8")
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes().replace(where, ROOT_MARK)).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not str(p.relative_to(folder)).startswith(SOURCE_COPIES)}


def build_digests(root: Path) -> dict[str, dict[str, str]]:
    """:func:`build` under ``root``, then every route's :func:`digests`."""
    return {route: digests(folder, root) for route, folder in build(root).items()}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        GOLDEN.write_text(json.dumps(build_digests(Path(d)), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
