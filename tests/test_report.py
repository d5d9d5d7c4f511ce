"""``synprep report``: the page's numbers are the folder's (recounted here from the HDF5 files and the
manifest with h5py and plain loops, not with the report's code), agreement figures are the CoNLL 2018
scorer's, every kind of folder works, a damaged folder is a one-line error, and the page renders in a
real headless browser with its figures drawn."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import SAMPLE_DATA, run_cli

from synprep.config import DataConfig
from synprep.parse.evaluate import evaluate_conllu
from synprep.pipeline import Runtime, SplitInputs, run_pipeline
from synprep.report import NO_PLOT, build_report, write_report
from synprep.types import DEPRELS, UPOS_TAGS

N_TRAIN = 40
N_PUD = 30
#: characters that need Moses escapes or break bracketed trees: PUD sentences with them are left out
SPECIAL = set("()[]&<>|\"'")


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _stanza(stanza_dir: Path, cache: Path) -> Runtime:
    return Runtime(cache=str(cache), parser={"dir": str(stanza_dir)})


# --- folders ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def de_runs(tmp_path_factory, stanza_dir):
    """sample_data de→en: a bpe folder (train + a test split cleaned like train), spm and hf folders."""
    d = tmp_path_factory.mktemp("report_de")
    cache = d / "cache.sqlite"
    for lang in ("de", "en"):
        lines = (SAMPLE_DATA / f"train.{lang}").read_text("utf-8").splitlines(keepends=True)
        (d / f"train.{lang}").write_text("".join(lines[:N_TRAIN]), encoding="utf-8")
        (d / f"test.{lang}").write_text("".join(lines[130:155]), encoding="utf-8")  # holds line 141: a ratio drop
    runtime = _stanza(stanza_dir, cache)
    outs = {"bpe": d / "bpe", "spm": d / "spm", "hf": d / "hf"}
    cfg = DataConfig.of(src_lang="de", tgt_lang="en", stanza_package="synprep", shard_size=25)
    train = SplitInputs(src=str(d / "train.de"), tgt=str(d / "train.en"))
    run_pipeline(train, outs["bpe"], cfg.replace(merges=300), runtime=runtime)
    run_pipeline(SplitInputs(split="test", src=str(d / "test.de"), tgt=str(d / "test.en"), clean=True), outs["bpe"],
                 cfg.replace(merges=300), runtime=runtime)
    run_pipeline(train, outs["spm"], cfg.replace(subword="spm", vocab_size=300), runtime=runtime)
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    text = [line for lang in ("de", "en") for line in (d / f"train.{lang}").read_text("utf-8").splitlines()]
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(d / "tokenizer.json"))
    run_pipeline(replace(train, subword_model=str(d / "tokenizer.json")), outs["hf"], cfg.replace(subword="hf"),
                 runtime=runtime)
    return outs


def _pud_blocks(path: Path, n: int) -> list[str]:
    """The first ``n`` sentence blocks of a PUD file without multiword tokens, empty nodes or SPECIAL characters."""
    out = []
    for block in path.read_text("utf-8").strip().split("\n\n"):
        rows = [r.split("\t") for r in block.splitlines() if not r.startswith("#")]
        if any("-" in r[0] or "." in r[0] for r in rows) or any(SPECIAL & set(r[1]) for r in rows):
            continue
        out.append(block)
        if len(out) == n:
            break
    return out


@pytest.fixture(scope="module")
def pud(tmp_path_factory, shared_data, stanza_dir):
    """English PUD: gold imported, stanza on the same words (with its constituency trees), stanza with the
    user's --trees, a same-language en→en gold import whose target is really German (a language flag),
    lowercased gold, and the English words parsed by the German model as if they were German (-s de)."""
    from synprep.text.bpe import learn_bpe

    d = tmp_path_factory.mktemp("report_pud")
    blocks = _pud_blocks(shared_data / "ud" / "en_pud-ud-test.conllu", N_PUD)
    gold = d / "gold.conllu"
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    ids = [next(r for r in b.splitlines() if r.startswith("# sent_id"))[len("# sent_id = "):] for b in blocks]
    de_text = {}
    for b in (shared_data / "ud" / "de_pud-ud-test.conllu").read_text("utf-8").strip().split("\n\n"):
        rows = b.splitlines()
        sid = next(r for r in rows if r.startswith("# sent_id"))[len("# sent_id = "):]
        de_text[sid] = next(r for r in rows if r.startswith("# text = "))[len("# text = "):]
    words = [[r.split("\t")[1] for r in b.splitlines() if not r.startswith("#")] for b in blocks]
    (d / "words.en").write_text("\n".join(" ".join(w) for w in words) + "\n", encoding="utf-8")
    (d / "pud.de").write_text("\n".join(de_text[i] for i in ids) + "\n", encoding="utf-8")
    (d / "trees.txt").write_text("\n".join("(ROOT (S " + " ".join(f"(X {w})" for w in ws) + "))" for ws in words)
                                 + "\n", encoding="utf-8")
    lower = d / "lower.conllu"
    lower.write_text("\n".join("\t".join([c[0], c[1].lower(), *c[2:]]) if not r.startswith("#") and r else r
                               for r in gold.read_text("utf-8").split("\n") for c in [r.split("\t")]),
                     encoding="utf-8")
    learn_bpe([d / "words.en", d / "pud.de"], 300, d / "codes")
    outs = {k: d / k for k in ("gold", "trees", "stanza", "same", "lower", "wrong")}
    test = SplitInputs(split="test", tgt=str(d / "pud.de"), codes=str(d / "codes"))
    on_words = replace(test, src=str(d / "words.en"))
    conllu = DataConfig.of(src_lang="en", tgt_lang="de", parser="conllu", shard_size=10, vocab_split="test")
    run_pipeline(replace(test, conllu=str(gold)), outs["gold"], conllu)
    stanza = conllu.replace(parser="stanza", stanza_package="synprep", ssplit=False, tokenized=True)
    runtime = _stanza(stanza_dir, d / "c.sqlite")
    run_pipeline(on_words, outs["stanza"], stanza, runtime=runtime)
    run_pipeline(replace(on_words, trees=str(d / "trees.txt")), outs["trees"], stanza, runtime=runtime)
    run_pipeline(on_words, outs["wrong"], stanza.replace(src_lang="de", language_check=False),
                 runtime=runtime)  # English parsed as German on purpose: what the report must flag
    run_pipeline(replace(test, conllu=str(gold)), outs["same"],
                 conllu.replace(tgt_lang="en", language_check=False))  # German text as the "en" target
    run_pipeline(replace(test, conllu=str(lower)), outs["lower"], conllu)
    return {"gold_file": gold, **outs}


# --- the numbers, recounted independently -----------------------------------------------------------


def _records(folder: Path, split: str):
    """Every pair of the split as a dict of numpy arrays, read with h5py alone (manifest order)."""
    m = json.loads((folder / "manifest.json").read_text("utf-8"))
    for s in m["splits"][split]["shards"]:
        with h5py.File(folder / s["file"], "r") as f:
            off = {k: f["offsets"][k][()] for k in f["offsets"]}
            data = {k: f[k][()] for k in f if k not in ("offsets", "line")}
            axis = {"src_ids": "src", "word_index": "src", "tgt_ids": "tgt", "heads": "word", "deprel": "word",
                    "upos": "word", "gaps_cnf": "gap", "gaps_nary": "gap", "sent_start": "sent", "ldd_dep": "ldd",
                    "ldd_head": "ldd", "ldd_rel": "ldd", "ldd_prob": "ldd"}
            for i in range(len(f["line"])):
                yield {k: data[k][off[a][i]:off[a][i + 1]].astype(np.float64 if k == "ldd_prob" else np.int64)
                       for k, a in axis.items()}


def _recount(folder: Path, split: str) -> dict:
    """The report's numbers by plain loops over the pairs."""
    c: dict = Counter()
    upos, rel, depth_hist, dlen, ent = Counter(), Counter(), Counter(), Counter(), []
    for r in _records(folder, split):
        c["pairs"] += 1
        c["src_pieces"] += len(r["src_ids"])
        c["tgt_pieces"] += len(r["tgt_ids"])
        c["words"] += len(r["heads"])
        c["unk_src"] += int(np.sum(r["src_ids"] == 3))
        c["unk_tgt"] += int(np.sum(r["tgt_ids"] == 3))
        heads = r["heads"].tolist()
        upos.update(UPOS_TAGS[u] for u in r["upos"].tolist())
        rel.update(DEPRELS[x] for x in r["deprel"].tolist())
        starts = [*r["sent_start"].tolist(), len(heads)]
        c["sentences"] += len(starts) - 1
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            depth = 0
            for w in range(a + 1, b + 1):  # 1-based words of the sentence
                k, steps = w, 1
                while heads[k - 1] != 0:
                    k, steps = heads[k - 1], steps + 1
                depth = max(depth, steps)
            depth_hist[depth] += 1
            if b - a >= 4 and depth <= 2:
                c["flat"] += 1
            c["flat_eligible"] += b - a >= 4
            nonproj = False
            for d in range(a + 1, b + 1):  # an arc is projective iff every word under it descends from its head
                h = heads[d - 1]
                if h == 0:
                    continue
                for m in range(min(h, d) + 1, max(h, d)):
                    k = m
                    while k != 0 and k != h:
                        k = heads[k - 1]
                    if k != h:
                        nonproj = True
            root = next(w for w in range(a + 1, b + 1) if heads[w - 1] == 0)  # no arc spans the root
            nonproj |= any(min(heads[d - 1], d) < root < max(heads[d - 1], d) for d in range(a + 1, b + 1)
                           if heads[d - 1] != 0)
            c["nonproj"] += nonproj
        for d, h in enumerate(heads, 1):
            if h:
                dlen[abs(h - d)] += 1
        best: dict = {}
        probs: dict = {}
        for d, h, p in zip(r["ldd_dep"].tolist(), r["ldd_head"].tolist(), r["ldd_prob"].tolist(), strict=True):
            probs.setdefault(d, []).append(p)
            if d not in best or p > best[d][1]:
                best[d] = (h, p)
        c["argmax_not_head"] += sum(1 for d, (h, _) in best.items() if h != heads[d - 1])
        ent += [-sum(p * math.log2(p) for p in ps) for ps in probs.values()]
    return {**c, "upos": upos, "deprel": rel, "depth": depth_hist, "dlen": dlen, "entropy_mean": float(np.mean(ent))}


@pytest.fixture(scope="module")
def bpe_page(de_runs, tmp_path_factory):
    """``synprep report BPE -o r.html --json`` (the CLI, figures drawn): the page's path."""
    page = tmp_path_factory.mktemp("report_page") / "r.html"
    proc = run_cli("report", str(de_runs["bpe"]), "-o", str(page), "--json")
    assert "synprep report:" in proc.stderr and page.stat().st_size > 10_000
    return page


def test_report_numbers_are_the_folders(de_runs, bpe_page):
    out, page = de_runs["bpe"], bpe_page
    rep = json.loads(page.with_suffix(".json").read_text("utf-8"))
    m = json.loads((out / "manifest.json").read_text("utf-8"))
    assert sorted(rep["splits"]) == ["test", "train"]
    for split, s in rep["splits"].items():
        entry = m["splits"][split]
        want = _recount(out, split)
        assert (s["input_lines"], s["pairs"]) == (entry["input_lines"], entry["pairs"]) == (entry["input_lines"],
                                                                                           want["pairs"])
        assert s["dropped"] == entry["dropped"]
        shown = {r: [e["line"] for e in ex] for r, ex in s["drop_examples"].items()}
        assert shown == {r: [d[0] for d in entry["dropped_lines"] if d[1] == r][:3]
                         for r in {d[1] for d in entry["dropped_lines"]}}
        assert s["lengths"]["src_pieces"]["n"] == want["pairs"]
        assert s["lengths"]["src_pieces"]["mean"] == pytest.approx(want["src_pieces"] / want["pairs"], abs=1e-4)
        assert s["lengths"]["tgt_pieces"]["mean"] == pytest.approx(want["tgt_pieces"] / want["pairs"], abs=1e-4)
        assert s["lengths"]["src_words"]["mean"] == pytest.approx(want["words"] / want["pairs"], abs=1e-4)
        assert s["unk"]["src"]["count"] == want["unk_src"] and s["unk"]["tgt"]["count"] == want["unk_tgt"]
        assert s["sentences"] == want["sentences"]
        assert s["upos"] == {t: want["upos"].get(t, 0) for t in UPOS_TAGS}
        assert s["deprel"] == {t: want["deprel"].get(t, 0) for t in DEPRELS}
        depth = s["tree_depth"]
        assert depth["counts"] + [0] * (depth["cap"] - len(depth["counts"])) == [
            want["depth"].get(k, 0) for k in range(depth["cap"])]
        dl = s["dependency_length"]
        assert dl["n"] == sum(want["dlen"].values())
        assert dl["mean"] == pytest.approx(sum(k * v for k, v in want["dlen"].items()) / dl["n"], abs=1e-4)
        assert s["non_projective"]["sentences"] == want["nonproj"]
        assert (s["flat_trees"]["sentences"], s["flat_trees"]["eligible"]) == (want["flat"], want["flat_eligible"])
        assert s["ldd"]["argmax_not_head"] == want["argmax_not_head"]
        assert s["ldd"]["entropy_bits"]["mean"] == pytest.approx(want["entropy_mean"], abs=1e-5)
        assert s["tree_source"] == "dependency" and s["signature"] == m["signature"]
    assert rep["splits"]["train"]["non_projective"]["sentences"] > 0  # the recount's loops were exercised
    # the test split was cleaned like the train split (line 141 of the train file dropped for its ratio)
    flags = {(f["id"], f["split"]) for f in rep["flags"]}
    assert ("cleaned-like-train", "test") in flags
    assert ("unlike-train", "test") not in flags and not [f for f in rep["flags"] if f["split"] == "train"]
    assert rep["splits"]["test"]["dropped"]["clean:ratio"] >= 1
    # the page shows them
    text = page.read_text("utf-8")
    assert "cleaned like a train split" in text and "http://" not in text and "https://" not in text
    assert text.count("data:image/png;base64,") == 3 + 3  # lengths, labels, syntax + 3 example pairs


# --- agreement ---------------------------------------------------------------------------------------


def _system_conllu(folder: Path, path: Path) -> None:
    """The folder's parses as CoNLL-U with the gold file's words (one sentence per line: PUD lines are sentences)."""
    words = [line.split() for line in (folder.parent / "words.en").read_text("utf-8").splitlines()]
    with open(path, "w", encoding="utf-8") as f:
        for ws, r in zip(words, _records(folder, "test"), strict=True):
            for k, w in enumerate(ws):
                f.write(f"{k + 1}\t{w}\t_\t{UPOS_TAGS[int(r['upos'][k])]}\t_\t_\t{int(r['heads'][k])}\t"
                        f"{DEPRELS[int(r['deprel'][k])]}\t_\t_\n")
            f.write("\n")


def test_against_the_same_gold_parses_is_100(pud):
    """Gold imported twice (into a de-target folder and a same-language en→en one): every parse agrees."""
    rep = build_report(pud["same"], against=pud["gold"], languages=False)
    a = rep["against"]["splits"]["test"]
    assert a["compared"] == N_PUD and a["different_words"] == 0 and a["worst"] == []
    assert a["scores"] == {"UAS": 100.0, "LAS": 100.0, "UPOS": 100.0, "Words": 100.0}


def test_user_trees_folder(pud):
    """--trees: the gaps come from the user's (flat) trees; the dependency parse is stanza's, the same as without."""
    rep = build_report(pud["trees"], against=pud["stanza"], languages=False)
    s, ref = rep["splits"]["test"], build_report(pud["stanza"], languages=False)["splits"]["test"]
    assert s["tree_source"] == "constituency" == ref["tree_source"]
    assert s["upos"] == ref["upos"] and s["pairs"] == N_PUD
    # flat trees (S (X w) ...): every word boundary is one constituent step, distance 2 (SPEC.md §2)
    assert s["gaps"]["nary"]["counts"] == [0, 0, s["gaps"]["nary"]["n"]] != ref["gaps"]["nary"]["counts"]
    assert rep["against"]["splits"]["test"]["scores"]["UAS"] == 100.0


def test_against_gold_gives_the_scorers_figures_for_a_stanza_parse(pud, tmp_path):
    rep = build_report(pud["stanza"], against=pud["gold"], languages=False)
    a = rep["against"]["splits"]["test"]
    system = tmp_path / "system.conllu"
    _system_conllu(pud["stanza"], system)
    want = evaluate_conllu(system, pud["gold_file"])
    assert a["compared"] == N_PUD
    assert a["scores"] == {m: pytest.approx(want[m], abs=1e-3) for m in ("UAS", "LAS", "UPOS", "Words")}
    assert a["scores"]["UAS"] < 100  # the small offline models do make mistakes
    worst = a["worst"]
    assert worst and worst == sorted(worst, key=lambda w: -w["differ"] / w["words"])[:len(worst)]


# --- every kind of folder; flags -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["spm", "hf"])
def test_raw_text_schemes(de_runs, kind):
    out = de_runs[kind]
    rep = build_report(out, languages=False)
    s = rep["splits"]["train"]
    m = json.loads((out / "manifest.json").read_text("utf-8"))["splits"]["train"]
    assert s["subword"] == kind and s["pairs"] == m["pairs"] == _recount(out, "train")["pairs"]
    assert s["subword_alignment"] == m["subword_alignment"]["total"]
    assert s["upos"] == {t: _recount(out, "train")["upos"].get(t, 0) for t in UPOS_TAGS}
    # the same parses as the bpe folder (one parse cache): agreement 100 on the lines both keep
    a = build_report(out, against=de_runs["bpe"], splits=["train"], languages=False)["against"]["splits"]["train"]
    assert a["compared"] > 0 and a["scores"]["UAS"] == 100.0


def test_flags_language_and_lowercase(pud):
    same = build_report(pud["same"])
    assert same["splits"]["test"]["src_lang"] == same["splits"]["test"]["tgt_lang"] == "en"
    lang = [f for f in same["flags"] if f["id"] == "language"]
    assert [(f["split"], f["message"]) for f in lang] == [("test", "the target side looks like 'de', not 'en'")]
    assert not [f for f in same["flags"] if f["id"] == "lowercased"]
    lower = build_report(pud["lower"])
    low = [f for f in lower["flags"] if f["id"] == "lowercased"]
    assert len(low) == 1 and "0.0% of 30 sampled lines" in low[0]["evidence"]
    assert not [f for f in lower["flags"] if f["id"] == "language"]


def test_source_parsed_in_the_wrong_language(pud):
    """English words parsed with -s de: the language flag names the source side, and the UPOS distribution
    is far from UD German's, much further than the gold English parse is from UD English's."""
    wrong, gold = build_report(pud["wrong"]), build_report(pud["gold"])
    lang = [f for f in wrong["flags"] if f["id"] == "language"]
    assert [f["message"] for f in lang] == ["the source side looks like 'en', not 'de'"]
    assert wrong["ud_reference"]["files"][0].startswith("de_") and gold["ud_reference"]["files"][0].startswith("en_")
    assert wrong["splits"]["test"]["ud"]["upos_js_bits"] > 3 * gold["splits"]["test"]["ud"]["upos_js_bits"]
    assert not [f for f in gold["flags"] if f["id"] in ("language", "ud-divergence", "lowercased")]


def test_damaged_folder_is_a_one_line_error(de_runs, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(de_runs["bpe"], out)
    shard = out / "train.00001.h5"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    proc = run_cli("report", str(out), "-o", str(tmp_path / "r.html"), "--json", check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("synprep: error: ") and "train.00001.h5" in proc.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "r.json").exists()
    proc = run_cli("report", str(de_runs["bpe"]), "--split", "nope", "-o", str(tmp_path / "r.html"), check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "split 'nope' is not in manifest.json" in proc.stderr


def test_without_matplotlib_the_page_has_the_numbers(pud, tmp_path, monkeypatch, caplog):
    rep = build_report(pud["gold"], languages=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an install without the plot extra sees
    info = write_report(rep, tmp_path / "r.html", tmp_path / "r.json")
    text = (tmp_path / "r.html").read_text("utf-8")
    assert info["figures"] is False and NO_PLOT in text and "data:image/png" not in text
    assert "pip install 'synprep[plot]'" in caplog.text
    assert json.loads((tmp_path / "r.json").read_text("utf-8"))["splits"]["test"]["pairs"] == N_PUD


# --- the page in a real browser --------------------------------------------------------------------------


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_page_renders_with_its_figures_in_chromium(bpe_page, tmp_path):
    """Screenshot of the page: the figures' regions hold matplotlib's drawn colours (tab:blue bars and lines)."""
    browser = _chromium()
    if browser is None:
        msg = "chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)"
        if _ci():
            pytest.fail(msg)
        pytest.skip(msg)
    from PIL import Image

    page = bpe_page
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1300,3400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    img = np.asarray(Image.open(shot).convert("RGB")).astype(np.int16)
    blue = np.all(np.abs(img - np.array([31, 119, 180])) < 12, axis=2)  # matplotlib's tab:blue
    rows = np.flatnonzero(blue.sum(axis=1) > 0)
    assert rows.size > 200, "no figure drawn"
    # the figure regions are not blank: each band of rows with blue holds many distinct colours
    bands = np.split(rows, np.flatnonzero(np.diff(rows) > 40) + 1)
    assert len(bands) >= 3  # lengths, labels, syntax (and examples below)
    for band in bands[:3]:
        region = img[band[0]:band[-1] + 1]
        assert (region.reshape(-1, 3) != 255).any(axis=1).mean() > 0.02
        assert len(np.unique(region.reshape(-1, 3), axis=0)) > 20


def test_spacy_japanese_folder(shared_data, tmp_path):
    """spaCy (ja_ginza, its own tokenizer): the numbers are the shards', the reference is UD Japanese GSD, and
    neither the case check (Japanese has no case) nor the language check fires."""
    src, tgt = tmp_path / "s.ja", tmp_path / "t.en"
    texts = [r[len("# text = "):] for r in (shared_data / "ud" / "ja_gsd-ud-test.conllu").read_text("utf-8").splitlines()
             if r.startswith("# text = ")][:12]
    src.write_text("\n".join(texts) + "\n", encoding="utf-8")
    tgt.write_text("".join((SAMPLE_DATA / "valid.en").read_text("utf-8").splitlines(keepends=True)[:12]), encoding="utf-8")
    out = tmp_path / "out"
    cfg = DataConfig.of(src_lang="ja", tgt_lang="en", merges=100, tokenizer="parser", parser="spacy",
                     spacy_model="ja_ginza")
    run_pipeline(SplitInputs(src=str(src), tgt=str(tgt), clean=False), out, cfg)
    rep = build_report(out)
    s, want = rep["splits"]["train"], _recount(out, "train")
    assert s["pairs"] == want["pairs"] == 12 and s["upos"] == {t: want["upos"].get(t, 0) for t in UPOS_TAGS}
    assert s["non_projective"]["sentences"] == want["nonproj"] and s["sentences"] == want["sentences"]
    assert rep["ud_reference"]["files"] == ["ja_gsd-ud-test.conllu"]
    assert rep["flags"] == []
