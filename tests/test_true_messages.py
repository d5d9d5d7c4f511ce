"""Messages that say what is true and a fix that works: each is printed once, names the option that fixes
it, and does not advise a command that would fail."""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path

import pytest
from helpers import run_cli

from synprep.errors import ConfigError, InputError


def test_moses_prefix_line_once_and_true(tmp_path: Path) -> None:
    """Turkish has no Moses nonbreaking prefixes: said once (not again by each worker); tokenizer.perl
    falls back to English too (it does not use none), and the line names --tokenizer parser."""
    src = tmp_path / "tr.txt"
    src.write_text("Bu bir Dr. test.\nİkinci satır.\n" * 3, encoding="utf-8")
    proc = run_cli("tokenize", "-l", "tr", "--jobs", "2", "-i", str(src))
    said = [line for line in proc.stderr.splitlines() if "nonbreaking prefixes" in line]
    assert said == ["synprep: no Moses nonbreaking prefixes for language 'tr': the English list is used, as Moses's "
                    "tokenizer.perl does (a word ending in '.' keeps its dot when it is an English abbreviation); "
                    "--tokenizer parser tokenizes with the parser's own tokenizer instead"]


def test_train_done_line_counts_the_epoch_under_way() -> None:
    """``epoch 17 step 300`` in the log is the 17th epoch, 16 finished: the last line says both."""
    from synprep.cli.train import done_line

    assert done_line({"step": 300, "epoch": 16, "batches_in_epoch": 12, "best_valid_loss": 4.5}) == (
        "done: 300 updates, 16 full epochs and 12 batches of epoch 17, best valid loss 4.500")
    assert done_line({"step": 320, "epoch": 17, "batches_in_epoch": 0, "best_valid_loss": 4.25}) == (
        "done: 320 updates, 17 full epochs, best valid loss 4.250")


def test_missing_valid_split_names_valid_split(tmp_path: Path) -> None:
    from synprep.train.data import no_split_message

    (tmp_path / "manifest.json").write_text(json.dumps({"splits": {"train": {}, "test": {}}}), encoding="utf-8")
    assert no_split_message(tmp_path, "valid", "--valid-split") == (
        "no shards of split 'valid' (expected valid.00000.h5, …); the folder's splits: test, train: name one with "
        "--valid-split SPLIT, or make the split (synprep pipeline --split valid …)")


def test_bom_line_once_a_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from synprep.textio import iter_lines

    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfa\nb\n")
    with caplog.at_level(logging.INFO, logger="synprep.textio"):
        for _ in range(3):
            assert list(iter_lines(path)) == ["a", "b"]
    assert [r.getMessage() for r in caplog.records if "byte-order" in r.getMessage()] == [
        f"{path}: removed the UTF-8 byte-order mark at the start of the file"]


def test_download_advice_for_a_folder_stanza_did_not_fill(stanza_dir: Path, tmp_path: Path) -> None:
    """A hand-made (read-only, shared) resource folder and its local package: the advice downloads into
    stanza's own folder with stanza's default package, and says to leave both options out."""
    from synprep.parse.stanza_parser import download_hint

    default = str(tmp_path / "stanza_home")
    assert download_hint("fr", str(stanza_dir), "synprep", default) == (
        f"run: synprep models download fr, then parse without --stanza-dir (stanza's folder {default}) and "
        f"without --stanza-package synprep (a package of that folder, not one stanza publishes: the download is "
        f"stanza's default fr package); {stanza_dir} was not filled by stanza's download")
    ours = tmp_path / "mine"
    ours.mkdir()
    (ours / "resources.json").write_text(json.dumps({"url": "https://example.org", "fr": {"pos": {"gsd": {}}}}),
                                         encoding="utf-8")
    assert download_hint("fr", str(ours), "gsd", default) == f"run: synprep models download fr --dir {ours} --package gsd"
    assert download_hint("fr", str(ours), "synprep", default) == (
        f"run: synprep models download fr --dir {ours}, then parse without --stanza-package synprep (stanza publishes "
        f"no package 'synprep' for fr: the download is stanza's default fr package)")
    if os.geteuid() != 0:  # root writes any folder
        ours.chmod(0o555)
        try:
            assert download_hint("fr", str(ours), None, default) == (
                f"run: synprep models download fr, then parse without --stanza-dir (stanza's folder {default}); "
                f"{ours} cannot be written")
        finally:
            ours.chmod(0o755)


def test_a_language_name_is_answered_with_its_code(tmp_path: Path) -> None:
    from synprep.text.langid import check_language_code

    with pytest.raises(ConfigError) as e:
        check_language_code("german", "-s/--source-lang")
    assert str(e.value) == "-s/--source-lang 'german' is not a language code: german is 'de' (ISO 639-1); run with -s de"
    with pytest.raises(ConfigError) as e:
        check_language_code("klingonx", "-t/--target-lang")
    assert str(e.value) == ("-t/--target-lang 'klingonx' is not a language code: give its ISO 639-1 code (de, en, "
                            "pt-br, ...)")


def test_folder_without_manifest_names_the_run_writing_it(tmp_path: Path) -> None:
    """export/report on a folder whose first run has not written a shard yet: the run is named."""
    from synprep.shards import Manifest

    out = tmp_path / "out"
    out.mkdir()
    (out / "pipeline.json").write_text("{}\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        Manifest.load(out)
    assert str(e.value).endswith("no manifest.json: no run into this folder wrote a shard (each stopped or failed "
                                 "before its first): run the command that makes it again (it resumes)")
    record = {"pid": os.getpid(), "host": socket.gethostname(), "command": "synprep pipeline --out out",
              "started": "2000-01-01T00:00:00Z", "split": "train"}
    (out / ".train.lock").write_text(json.dumps(record), encoding="utf-8")
    for args in (("report", str(out)), ("export", str(out), "--format", "factors", "--to", str(tmp_path / "x"))):
        proc = run_cli(*args, check=False)
        assert (proc.returncode, proc.stderr.strip().splitlines()[-1]) == (2, (
            f"synprep: error: {out / 'manifest.json'}: no manifest.json yet: the train split is being written by "
            f"pid {os.getpid()} on {socket.gethostname()} (synprep pipeline --out out, since 2000-01-01T00:00:00Z), "
            f"and the manifest appears with its first shard: wait for it to finish"))


def _annotate_conllu(tmp_path: Path, name: str, lines: list[str]) -> str:
    """``annotate --parser conllu`` of ``lines`` (pieces without ``@@``; each word its own parse); the signature."""
    src, tgt, conllu = tmp_path / f"{name}.en", tmp_path / f"{name}.de", tmp_path / f"{name}.conllu"
    src.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    tgt.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    conllu.write_text("".join("".join(f"{i}\t{w}\t_\tX\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}"
                                      f"\t_\t_\n" for i, w in enumerate(x.split(), 1)) + "\n" for x in lines),
                      encoding="utf-8")
    proc = run_cli("annotate", "--src", str(src), "--tgt", str(tgt), "-s", "en", "-t", "de", "--parser", "conllu",
                   "--conllu", str(conllu), "--no-language-check", "--out", str(tmp_path / name))
    return proc.stderr.strip().splitlines()[-1]


def test_annotate_signature_says_lowercased_pieces(tmp_path: Path) -> None:
    """fairseq's prepared pieces are lowercased: the signature says lc:yes (it said lc:no); cased pieces lc:no."""
    lowered = [f"the {w} house is small and old ." for w in ("red", "green", "blue", "big", "new", "tall", "low",
                                                              "far", "near", "cold")]
    assert "|lc:yes|" in _annotate_conllu(tmp_path, "lower", lowered)
    assert "|lc:no|" in _annotate_conllu(tmp_path, "cased", [x.capitalize() for x in lowered])


@pytest.mark.parametrize("words", [
    "国際連合安全保障理事会 は 昨日 緊急会合 を 開き 共同声明 を 発表 し た と 報道機関 が 伝え た 。 以上".split(),
    ("国際連合安全保障理事会 は 昨日 緊急会合 を 開き 声明 を 発表 し た 。 " * 2).split(),
])
def test_show_png_japanese_words_overlap_nothing(words: list[str]) -> None:
    """The arc panel's words (CJK: a full em a character) overlap neither their neighbours nor the UPOS tags."""
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from synprep.show import pair_figure
    from tests.test_show_draw import view_of

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no CJK font here: boxes of about the same width
        fig = pair_figure(view_of(words, [2] * (len(words) - 1), "dependency"))
        FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    arcs = fig.axes[0]
    texts = [t for t in arcs.texts if t.get_text() in words]
    boxes = [t.get_window_extent(renderer) for t in texts]
    tags = [t.get_window_extent(renderer) for t in arcs.texts if t.get_text() == "X"]
    assert not [(a, b) for a in boxes for b in tags if a.overlaps(b)]
    if texts[0].get_rotation() == 0:
        assert not [k for k, (a, b) in enumerate(zip(boxes, boxes[1:], strict=False)) if a.overlaps(b)]
    else:  # slanted: a word's baseline is the next one's less than its height away only when they touch
        assert texts[0].get_fontsize() * 1.2 < fig.get_figwidth() * 72 / len(words) * 0.7
