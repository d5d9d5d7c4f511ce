"""Every character Moses treats specially survives every route, token for token.

The characters sacremoses escapes (``| [ ] & < > ' "``), ``@`` (and ``@@`` inside a word, subword-nmt's
marker), a line that starts with ``|`` (clean-corpus-n.perl's rule for a factored corpus reads the
first line), the same characters inside words, and ``(`` ``)`` (``-LRB-`` ``-RRB-`` in ``--trees``'
leaves) go through each route into a folder: raw ``pipeline``, ``pipeline --tokenized``,
``pipeline --tokenized --trees``, ``pipeline --parser conllu --conllu`` and ``annotate --parse-src``.
For every case the stored text (``OUT/text/*``: tokens, cleaned, BPE'd) and the shards (the words
the parser read, the target pieces) are compared with the input, exactly:

* raw: the stored text is sacremoses' escaped tokens of the line, the parser's words its unescaped tokens;
* ``--tokenized`` (and ``--trees``): the input's tokens, as given, in the text and in the parser's words;
* ``--conllu``: the parser's words are the CoNLL-U's FORMs; the stored text their Moses escapes;
* ``annotate``: the parser's words are ``--parse-src``'s tokens; the pieces are the input's.

One small folder per route (one line per case), shared by the cases; real stanza German models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import run_cli
from sacremoses import MosesTokenizer

from synprep.text.escape import escape
from synprep.vocab import Vocab

#: case → (source line, target line), tokens separated by single spaces; line k of every corpus is
#: case k (the first line starts with "|": the first line is what a factored corpus is detected by)
CASES: dict[str, tuple[str, str]] = {
    "pipe_first": ("| Der Hund läuft .", "| The dog runs ."),
    "pipe": ("Der Mann | sieht den Hund .", "The man | sees the dog ."),
    "lbracket": ("Der Mann [ sieht den Hund .", "The man [ sees the dog ."),
    "rbracket": ("Der Mann ] sieht den Hund .", "The man ] sees the dog ."),
    "amp": ("Der Mann & die Frau gehen .", "The man & the woman go ."),
    "lt": ("Der Mann < die Frau .", "The man < the woman ."),
    "gt": ("Der Mann > die Frau .", "The man > the woman ."),
    "at": ("Der Mann @ die Frau .", "The man @ the woman ."),
    "apos": ("Der Mann ' sieht den Hund .", "The man ' sees the dog ."),
    "quot": ('Der Mann " sieht den Hund .', 'The man " sees the dog .'),
    "paren": ("Der Mann ( sieht ) den Hund .", "The man ( sees ) the dog ."),
    "atat_inside": ("Der Mo@@tor läuft .", "The en@@gine runs ."),
    "inside_words": ("AT&T sagt's a|b [1] <b> x@y \"ja\" .", "AT&T says a|b [1] <b> x@y \"yes\" ."),
}
NAMES = list(CASES)
ROUTES = ["raw", "tokenized", "trees", "conllu", "annotate"]


def _order(route: str) -> list[str]:
    """The cases in the order of the route's corpus: ``--tokenized``'s first line holds no ``|`` (a corpus
    whose first line has one is "factored" to clean-corpus-n.perl; one whose first line has none loses its
    ``|``), the other routes' first line starts with one."""
    return [*NAMES[2:], *NAMES[:2]] if route == "tokenized" else NAMES

_MOSES = {lang: MosesTokenizer(lang=lang) for lang in ("de", "en")}


def _moses(line: str, lang: str, *, esc: bool) -> list[str]:
    return _MOSES[lang].tokenize(line, escape=esc)


def _unbpe(pieces: list[str]) -> list[str]:
    """subword-nmt pieces → tokens (a piece ending in ``@@`` continues into the next)."""
    words, current = [], ""
    for p in pieces:
        if p.endswith("@@"):
            current += p[:-2]
        else:
            words.append(current + p)
            current = ""
    assert not current, pieces
    return words


def _bpe_by_hand(tokens: list[str]) -> str:
    """Pieces for ``annotate``'s input: every token of four or more characters cut after its first two
    (a token with ``@@`` inside stays whole: a piece, not a marker)."""
    out = []
    for t in tokens:
        if len(t) >= 4 and "@@" not in t:
            out += [t[:2] + "@@", t[2:]]
        else:
            out.append(t)
    return " ".join(out)


def _conllu(lines: list[str]) -> str:
    blocks = []
    for line in lines:
        words = line.split()
        rows = [f"{i}\t{w}\t_\tX\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
                for i, w in enumerate(words, 1)]
        blocks.append("\n".join(rows) + "\n")
    return "\n".join(blocks) + "\n"


def _leaf(word: str) -> str:
    """The --trees reader's spelling of a word as a leaf: ``(`` and ``)`` as ``-LRB-`` and ``-RRB-``."""
    return word.replace("(", "-LRB-").replace(")", "-RRB-")


def _trees(lines: list[str]) -> str:
    return "".join("(ROOT (S " + " ".join(f"(X {_leaf(w)})" for w in line.split()) + "))\n" for line in lines)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def _expected(route: str, case: str) -> dict[str, list[str]]:
    """What the folder must hold for ``case``: ``src`` (stored source text), ``words`` (the parser's),
    ``tgt`` (stored target text, the pieces joined)."""
    de, en = CASES[case]
    if route == "raw":
        return {"src": _moses(de, "de", esc=True), "words": _moses(de, "de", esc=False),
                "tgt": _moses(en, "en", esc=True)}
    if route == "conllu":
        return {"src": [escape(w) for w in de.split()], "words": de.split(), "tgt": en.split()}
    return {"src": de.split(), "words": de.split(), "tgt": en.split()}


def _run(route: str, base: Path, stanza_dir: Path) -> Path:
    src = [CASES[c][0] for c in _order(route)]
    tgt = [CASES[c][1] for c in _order(route)]
    d = base / route
    d.mkdir()
    out = d / "out"
    common = ["-s", "de", "-t", "en", "--out", str(out), "-j", "1", "--no-language-check"]
    stanza = ["--no-cache", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep"]
    de, en = _write(d / "in.de", src), _write(d / "in.en", tgt)
    if route == "raw":
        run_cli("pipeline", "--src", str(de), "--tgt", str(en), "--merges", "30", *common, *stanza)
    elif route == "tokenized":
        run_cli("pipeline", "--tokenized", "--src", str(de), "--tgt", str(en), "--merges", "30", *common, *stanza)
    elif route == "trees":
        trees = d / "trees.de"
        trees.write_text(_trees(src), encoding="utf-8")
        run_cli("pipeline", "--tokenized", "--no-clean", "--trees", str(trees), "--src", str(de), "--tgt", str(en),
                "--merges", "30", *common, *stanza)
    elif route == "conllu":
        conllu = d / "in.conllu"
        conllu.write_text(_conllu(src), encoding="utf-8")
        run_cli("pipeline", "--parser", "conllu", "--conllu", str(conllu), "--tokenized", "--tgt", str(en),
                "--merges", "30", *common)
    else:
        bde = _write(d / "bpe.de", [_bpe_by_hand(x.split()) for x in src])
        ben = _write(d / "bpe.en", [_bpe_by_hand(x.split()) for x in tgt])
        run_cli("annotate", "--src", str(bde), "--tgt", str(ben), "--parse-src", str(de), *common, *stanza)
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory, stanza_dir) -> Callable[[str], Path]:
    """route → its folder, made on first use."""
    base = tmp_path_factory.mktemp("classes")
    made: dict[str, Path | AssertionError] = {}

    def get(route: str) -> Path:
        if route not in made:
            try:
                made[route] = _run(route, base, stanza_dir)
            except AssertionError as e:  # every case of the route fails with the run's error
                made[route] = e
        got = made[route]
        if isinstance(got, AssertionError):
            raise got
        return got

    return get


def _shard_lines(out: Path) -> dict[int, dict[str, list[str]]]:
    """line → the parser's words and the target pieces, read from the shards with h5py."""
    vocab = Vocab.load(out / "dict.txt")
    found: dict[int, dict[str, list[str]]] = {}
    for shard in sorted(out.glob("train.*.h5")):
        with h5py.File(shard, "r") as f:
            words = f["words"][()].tobytes().decode("utf-8").split("\n")[:-1]
            wo, to = f["offsets/word"][()], f["offsets/tgt"][()]
            tgt_ids = f["tgt_ids"][()]
            for i, n in enumerate(f["line"][()].tolist()):
                found[n] = {"words": words[wo[i]:wo[i + 1]],
                            "tgt": vocab.decode(np.asarray(tgt_ids[to[i]:to[i + 1]]))}
    return found


def _text(out: Path, kind: str, lang: str) -> list[list[str]]:
    return [x.split(" ") for x in (out / "text" / f"train.{kind}.{lang}").read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", NAMES)
@pytest.mark.parametrize("route", ROUTES)
def test_every_token_is_stored_as_given(folder, route, case):
    out = folder(route)
    k = _order(route).index(case) + 1
    want = _expected(route, case)
    manifest = json.loads((out / "manifest.json").read_text())
    train = manifest["splits"]["train"]
    assert train["dropped_lines"] == [] and train["pairs"] == len(CASES)
    stored = _shard_lines(out)[k]
    assert stored["words"] == want["words"], "the words the parser read"
    assert _unbpe(stored["tgt"]) == want["tgt"], "the target pieces in the shard"
    if route == "annotate":
        return  # annotate stores no text: its input is the text
    lines = [int(x) for x in (out / "text" / "train.lines").read_text().split()]
    assert lines == list(range(1, len(CASES) + 1))
    for kind in ("tok", "clean"):
        assert _text(out, kind, "de")[k - 1] == want["src"], f"text/train.{kind}.de"
        assert _text(out, kind, "en")[k - 1] == want["tgt"], f"text/train.{kind}.en"
    assert _unbpe(_text(out, "bpe", "de")[k - 1]) == want["src"], "text/train.bpe.de"
    assert _unbpe(_text(out, "bpe", "en")[k - 1]) == want["tgt"], "text/train.bpe.en"


def test_a_token_that_ends_in_the_bpe_marker_is_refused(tmp_path, stanza_dir):
    """subword-nmt cannot write a token that ends in ``@@``: its last piece would join the next word (``x@@ comes``
    → ``xcomes``; silently on the target side, where no parser reads the words). One error, no shard."""
    de = _write(tmp_path / "in.de", ["Der Mann sieht den Hund .", "Er kommt ."])
    en = _write(tmp_path / "in.en", ["The man sees the dog .", "He x@@ comes ."])
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--tokenized", "--src", str(de), "--tgt", str(en), "-s", "de", "-t", "en", "--out",
                   str(out), "--merges", "30", "-j", "1", "--no-language-check", "--no-cache", "--stanza-dir",
                   str(stanza_dir), "--stanza-package", "synprep", check=False)
    assert proc.returncode == 2, proc.stderr
    errors = [x for x in proc.stderr.splitlines() if x.startswith("synprep: error:")]
    assert errors == [f"synprep: error: {en}:2: token 2 'x@@' ends in '@@', subword-nmt's continuation marker: "
                      "its last BPE piece would be read as joined to the next word; write the token otherwise "
                      "(e.g. 'x@ @'), or use --subword spm"]
    assert not list(out.glob("*.h5")) and not (out / "code").exists()  # refused before the codes are learned
