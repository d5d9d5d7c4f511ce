"""The syntax-source registry: every registered source trains, reads the parse, and resolves its
paper's defaults; known answers of the new sources' masks and relations on hand-computed trees
(SLA, the LDD paper's 1-best parent matrix, LISA's first-piece parents and losses, SET)."""

from __future__ import annotations

import dataclasses
import math

import builders
import numpy as np
import pytest
import torch

from synprep.constants import PAD_ID
from synprep.errors import ConfigError
from synprep.shards.synthetic import random_records
from synprep.train.attention import gated_heads
from synprep.train.config import (
    GATED_PAPER_DEFAULTS,
    TrainConfig,
    load_preset,
    with_overrides,
)
from synprep.train.data import Collater, RecordDataset
from synprep.train.loop import Trainer
from synprep.train.masks import padding_bias
from synprep.train.model import Seq2Seq
from synprep.train.sources import SOURCES, source_class
from synprep.train.sources.base import SyntaxSource
from synprep.train.sources.lisa import lisa_loss
from synprep.train.sources.set import NONE, SELF, path_ids, set_relations
from synprep.train.sources.sla import sla_word_mask
from synprep.train.toydata import build_vocab, record_of_words
from synprep.types import DEPRELS, PairRecord

#: what a source needs besides its name to run as its paper runs it (LISA: one supervised head)
EXTRA = {"lisa": {"syntax_layers": [0], "syntax_heads": [0]}}


def paper_config(name: str, base: TrainConfig | None = None, **more) -> TrainConfig:
    """``base`` (the tiny preset) running source ``name`` in its paper's mode."""
    cls = source_class(name)
    return with_overrides(base or load_preset("tiny"),
                          {"syntax": cls.paper_modes[0], "syntax_source": name, **EXTRA.get(name, {}), **more})


def record(src_ids, word_index, heads, deprel=None, gaps=None) -> PairRecord:
    return builders.record(src_ids, word_index, heads, deprel=deprel, gaps=gaps)


D = {name: DEPRELS.index(name) for name in ("det", "nsubj", "root", "obj")}
# SPEC.md §4: "The mon@@ key eats a ban@@ ana"; The→monkey (det), monkey→eats (nsubj), eats = root,
# a→banana (det), banana→eats (obj); pieces 0 | 1 2 | 3 | 4 | 5 6, </s> = 7
MONKEY = record([20, 21, 22, 23, 24, 25, 26], [0, 1, 1, 2, 3, 4, 4], [2, 3, 0, 5, 3],
                [D["det"], D["nsubj"], D["root"], D["det"], D["obj"]])
SHORT = record([30, 31, 32], [0, 1, 2], [2, 0, 2])  # a second, shorter sentence: padding in the batch


def rows(m: torch.Tensor) -> list[str]:
    return ["".join("1" if x else "0" for x in r) for r in m.tolist()]


# --- registry ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_registry_entries_are_sources(name):
    cls = source_class(name)
    assert issubclass(cls, SyntaxSource) and cls.name == name and cls.cite
    assert set(cls.record_fields) <= {f.name for f in dataclasses.fields(PairRecord)}
    assert set(cls.defaults) <= set(GATED_PAPER_DEFAULTS)
    assert set(cls.paper_modes) <= set(cls.modes)


def test_unknown_source_lists_the_registry():
    with pytest.raises(ConfigError, match="set"):
        TrainConfig(syntax_source="dependency")


# --- every source trains, and reads the parse ---------------------------------------------------
@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(0)
    return RecordDataset(list(random_records(24, rng, words=8, tgt_len=8, vocab_size=200))), \
        [f"p{i}" for i in range(200)]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_source_trains_two_updates(tmp_path, synthetic, name):
    """Two real updates on the CPU; the source's own parameters (if any) move."""
    ds, symbols = synthetic
    cfg = paper_config(name, max_steps=2, max_tokens=128, log_interval=1, gate_freeze_epochs=0)
    tr = Trainer(cfg, ds, ds, symbols, tmp_path, torch.device("cpu"), progress=False)
    own = {k: p.detach().clone() for k, p in tr.model.named_parameters()
           if k.startswith("syntax_sources.") or ".syntax_modules." in k}
    summary = tr.run()
    assert summary["step"] == 2 and math.isfinite(summary["best_valid_loss"])
    assert cfg.describe().startswith(f"{cfg.syntax}/")
    after = dict(tr.model.named_parameters())
    assert all(not torch.equal(p, after[k]) for k, p in own.items()), [k for k, p in own.items()
                                                                        if torch.equal(p, after[k])]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_parse_changes_the_encoder(name):
    """Same pieces, another parse: the encoder output (or LISA's loss, its only use of the parse) changes."""
    words = ["eine", "frau", "mit", "einem", "großen", "sonnenschirm", "steht", "am", "strand"]
    symbols = build_vocab([words], split_len=5).symbols
    a = record_of_words(1, [words], words[:3], symbols, np.random.default_rng(1), split_len=5)
    b = record_of_words(1, [words], words[:3], symbols, np.random.default_rng(7), split_len=5)
    assert np.array_equal(a.src_ids, b.src_ids) and not np.array_equal(a.heads, b.heads)
    cfg = paper_config(name, dropout=0.0, attention_dropout=0.0, syntax_dropout=0.0)
    torch.manual_seed(0)
    model = Seq2Seq(cfg, len(symbols))
    model.train(name == "lisa")  # LISA's loss exists in training only
    collate = Collater.for_model(model)
    with torch.no_grad():
        ea, eb = model.encode(collate([(0, a)])), model.encode(collate([(0, b)]))
    if name == "lisa":
        assert ea.aux_loss is not None and eb.aux_loss is not None
        torch.testing.assert_close(ea.x, eb.x)
        assert not torch.isclose(ea.aux_loss, eb.aux_loss)
    else:
        assert ea.aux_loss is None
        assert not torch.allclose(ea.x, eb.x, atol=1e-4)


# --- defaults from each source's paper ----------------------------------------------------------
def test_syntax_dropout_default_follows_the_sources_paper():
    assert TrainConfig(syntax="gated", syntax_source="slr").syntax_dropout == 0.4  # gated paper, Table 2
    assert TrainConfig(syntax="hard", syntax_source="slr").syntax_dropout == 0.0  # the SLR paper has none
    assert TrainConfig(syntax="hard", syntax_source="pascal").syntax_dropout == 0.0
    sla = TrainConfig(syntax="gated", syntax_source="sla")  # SLA's unregularised, naive gate
    assert (sla.syntax_dropout, sla.gate_freeze_epochs, sla.gate_batch_norm) == (0.0, 0, False)
    assert TrainConfig(syntax="gated", syntax_source="sla", syntax_dropout=0.2).syntax_dropout == 0.2  # explicit wins
    # a changed source resolves again; an explicit value survives
    hard = with_overrides(TrainConfig(syntax="gated"), {"syntax": "hard"})
    assert hard.syntax_dropout == 0.0 and hard.to_dict()["syntax_dropout"] == 0.0
    kept = with_overrides(TrainConfig(syntax="gated", syntax_dropout=0.3), {"syntax": "hard"})
    assert kept.syntax_dropout == 0.3


def test_sources_with_different_defaults_need_an_explicit_value():
    with pytest.raises(ConfigError, match="gate_freeze_epochs"):
        TrainConfig(syntax="gated", syntax_source=["sla"] + ["slr"] * 5, syntax_dropout=0.1)


def test_lisa_supervises_exactly_one_head_without_a_gate():
    with pytest.raises(ConfigError, match="exactly one head"):
        TrainConfig(syntax="hard", syntax_source="lisa")
    with pytest.raises(ConfigError, match="hard | pure"):
        TrainConfig(syntax="gated", syntax_source="lisa", syntax_layers=[0], syntax_heads=[1])
    with pytest.raises(ConfigError, match="lisa_variant"):
        TrainConfig(syntax="hard", syntax_source="lisa", syntax_heads=[1], lisa_variant="l1")
    assert TrainConfig(syntax="hard", syntax_source="lisa", syntax_heads=[1]).head_sources() == \
        {0: [None, "lisa", None, None]}


def test_sla_gate_has_no_batchnorm():
    model = Seq2Seq(TrainConfig(syntax="gated", syntax_source="sla", d_model=32, heads=4, encoder_layers=1,
                                decoder_layers=1, gate_hidden=8), 50)
    assert model.encoder[0].gate is not None and model.encoder[0].gate.bn is None


# --- SLA: path-distance threshold mask (known answers) -----------------------------------------
def test_sla_word_mask_known_answer():
    # path lengths: The–monkey 1, The–eats 2, The–banana 3, The–a 4, monkey–banana 2, a–eats 2
    assert rows(torch.from_numpy(sla_word_mask(MONKEY.heads, 1))) == \
        ["11000", "11100", "01101", "00011", "00111"]
    assert rows(torch.from_numpy(sla_word_mask(MONKEY.heads, 2))) == \
        ["11100", "11101", "11111", "00111", "01111"]
    # two sentences in one line (heads line-level): their roots never see each other
    assert rows(torch.from_numpy(sla_word_mask(np.array([2, 0, 0]), 5))) == ["110", "110", "001"]


def test_sla_piece_bias_through_collate():
    cfg = TrainConfig(syntax="gated", syntax_source="sla", sla_threshold=1)
    batch = Collater(["sla"], cfg)([(0, MONKEY), (1, SHORT)])
    pad = batch.src_tokens.eq(PAD_ID)
    bias = source_class("sla")(cfg).prepare(batch.syntax["sla"], pad)
    assert bias.shape == (2, 1, 8, 8)
    assert rows(bias[0, 0] == 0) == ["11100000", "11110000", "11110000", "01110110",
                                     "00001110", "00011110", "00011110", "00000001"]
    # SHORT: pieces 0 1 2, </s> 3, padding 4-7: padding keys masked, padding rows keep </s>
    assert rows(bias[1, 0] == 0)[:4] == ["11000000", "11100000", "01100000", "00010000"]
    assert all(r == "00010000" for r in rows(bias[1, 0] == 0)[4:])


# --- the LDD paper's 1-best unlabeled parent matrix ------------------------------------------------
def test_ldd_parent_matrix_known_answer():
    cfg = TrainConfig(syntax="hard", syntax_source="ldd_parent")
    batch = Collater(["ldd_parent"], cfg)([(0, MONKEY), (1, SHORT)])
    w = source_class("ldd_parent")(cfg).prepare(batch.syntax["ldd_parent"], batch.src_tokens.eq(PAD_ID))
    assert w.shape == (2, 1, 8, 8)
    # The→monkey (both pieces), monkey→eats, eats = root → itself, a→banana, banana→eats; </s> 0
    assert rows(w[0, 0]) == ["01100000", "00010000", "00010000", "00010000",
                             "00000110", "00010000", "00010000", "00000000"]
    assert set(w.unique().tolist()) == {0.0, 1.0}


# --- LISA: first-piece parents and the two losses ------------------------------------------------
def test_lisa_parents_are_first_pieces():
    cfg = TrainConfig(syntax="hard", syntax_source="lisa", syntax_heads=[0])
    data = Collater(["lisa"], cfg)([(0, MONKEY), (1, SHORT)]).syntax["lisa"]
    assert data["parents"][0].tolist() == [1, 3, 3, 3, 5, 3, 3, 7]  # SPEC §4 "first"; </s> → itself
    assert data["parents"][1].tolist() == [1, 1, 1, 3, 3, 3, 3, 3]  # padding → </s>
    assert data["real"].sum(1).tolist() == [7, 3]  # </s> and padding carry no loss


def test_lisa_losses_known_answers():
    T = 5
    parents = torch.tensor([[1, 3, 3, 3, 4]])
    real = torch.tensor([[True, True, True, True, False]])
    uniform = torch.zeros(1, 1, T, T)
    # uniform rows: ‖a − e_p‖² = Σ 1/T² − 2/T + 1 = 1 − 1/T per real row; NLL = log T
    assert lisa_loss(uniform, parents, real, "lisa").item() == pytest.approx(4 * (1 - 1 / T))
    assert lisa_loss(uniform, parents, real, "sisa").item() == pytest.approx(4 * math.log(T))
    sharp = torch.full((1, 1, T, T), -1e4).scatter(-1, parents[:, None, :, None], 0.0)
    assert lisa_loss(sharp, parents, real, "lisa").item() == pytest.approx(0.0, abs=1e-6)
    assert lisa_loss(sharp, parents, real, "sisa").item() == pytest.approx(0.0, abs=1e-6)


# --- SET: relations, subtree, levels, and eq. 1–3 against a loop ---------------------------------------
def test_set_relations_known_answer():
    rel, sub, depth = set_relations(MONKEY.heads, MONKEY.deprel, max_path=3)
    p = path_ids(3)
    up = lambda lab: 2 + 2 * D[lab]  # noqa: E731  (i → its head, labelled with i's relation)
    down = lambda lab: 2 + 2 * D[lab] + 1  # noqa: E731  (i → its dependent j, labelled with j's)
    assert depth.tolist() == [2, 1, 0, 2, 1]
    expected = [  # The, monkey, eats, a, banana
        [SELF, up("det"), p[2, 0], NONE, p[2, 1]],
        [down("det"), SELF, up("nsubj"), p[1, 2], p[1, 1]],
        [p[0, 2], down("nsubj"), SELF, p[0, 2], down("obj")],
        [NONE, p[2, 1], p[2, 0], SELF, up("det")],
        [p[1, 2], p[1, 1], up("obj"), down("det"), SELF],
    ]
    assert rel.tolist() == expected
    assert rows(torch.from_numpy(sub)) == ["10000", "11000", "11111", "00010", "00011"]
    assert len(set(path_ids(3).values())) == 7 and min(path_ids(3).values()) == 2 + 2 * len(DEPRELS)
    # two sentences: no relation across them, whatever the threshold
    rel2, _, _ = set_relations(np.array([2, 0, 0]), np.array([D["det"], D["root"], D["root"]]), max_path=9)
    assert rel2[1, 2] == rel2[2, 1] == rel2[0, 2] == NONE


def _set_relations_by_masks(heads, deprel, max_path):
    """The relation ids as set_relations built them before its table lookup: one (W, W) mask per (up, down)."""
    from synprep.features.relations import tree_relations
    from synprep.train.sources.base import sentence_paths
    from synprep.train.sources.set import LABEL0

    tr = tree_relations(heads)
    path = sentence_paths(tr)
    dep = np.asarray(deprel, dtype=np.int64)
    rel = np.full(path.shape, NONE, dtype=np.int64)
    for (u, d), rid in path_ids(max_path).items():
        rel[(tr.up == u) & (tr.down == d) & (path >= 0)] = rid
    rel = np.where((tr.up == 1) & (tr.down == 0), LABEL0 + 2 * dep[:, None], rel)
    rel = np.where((tr.up == 0) & (tr.down == 1), LABEL0 + 2 * dep[None, :] + 1, rel)
    np.fill_diagonal(rel, SELF)
    return rel


def _random_lines(rng, count):
    """``count`` random lines of one to three sentences (random trees, deep chains, flat stars), as
    (line-level heads, deprel ids)."""
    for _ in range(count):
        heads, offset = [], 0
        for _ in range(rng.integers(1, 4)):
            n = int(rng.integers(1, 25))
            shape = rng.integers(3)  # 0: random tree, 1: a chain, 2: a star
            parent = [0] + [int(rng.integers(0, i)) + 1 if shape == 0 else (i if shape == 1 else 1) for i in range(1, n)]
            root = int(rng.integers(n))  # re-root: swap word 0 and ``root``
            perm = list(range(n))
            perm[0], perm[root] = perm[root], perm[0]
            inv = {p: i for i, p in enumerate(perm)}
            local = [0] * n
            for i in range(n):
                p = parent[perm[i]]
                local[i] = 0 if p == 0 else inv[p - 1] + 1
            heads += [0 if h == 0 else h + offset for h in local]
            offset += n
        yield np.array(heads), rng.integers(len(DEPRELS), size=len(heads))


def test_set_relations_table_lookup_equals_the_masks_it_replaced():
    """Random lines of one to three sentences (deep chains and flat stars among them), every max_path 0-6:
    the table lookup gives the ids of the per-(up, down) masks."""
    for heads_a, deprel in _random_lines(np.random.default_rng(7), 300):
        for max_path in range(7):
            got = set_relations(heads_a, deprel, max_path)[0]
            assert np.array_equal(got, _set_relations_by_masks(heads_a, deprel, max_path)), (heads_a, max_path)


def test_set_relations_of_a_batch_equal_each_line_s():
    """The collate's batched relations (every line climbed together): per line, set_relations' ids, subtree
    and depth in the top-left corner, NONE / False / 0 beyond (``extra`` positions too); batches of 1-40 random
    lines, max_path 0-6."""
    from synprep.train.sources.set import set_relations_batch

    rng = np.random.default_rng(11)
    for _ in range(40):
        lines = list(_random_lines(rng, int(rng.integers(1, 41))))
        extra = int(rng.integers(3))  # positions past the longest line (the collate's </s> column: 1)
        W = max(len(h) for h, _ in lines) + extra
        for max_path in (0, 1, 3, 6):
            rel, sub, depth = set_relations_batch([h for h, _ in lines], [d for _, d in lines], max_path, extra)
            assert rel.shape == sub.shape == (len(lines), W, W) and depth.shape == (len(lines), W)
            for b, (h, d) in enumerate(lines):
                n = len(h)
                want = set_relations(h, d, max_path)
                assert np.array_equal(rel[b, :n, :n], want[0]) and np.array_equal(sub[b, :n, :n], want[1])
                assert np.array_equal(depth[b, :n], want[2])
                assert (rel[b, n:] == NONE).all() and (rel[b, :, n:] == NONE).all()
                assert not sub[b, n:].any() and not sub[b, :, n:].any() and (depth[b, n:] == 0).all()


@pytest.mark.parametrize(("heads", "what"), [([2, 1, 0], "cycle"), ([0, 4, 1], "lie in"), ([0, 2], "lie in")])
def test_set_relations_of_a_batch_refuse_bad_heads_naming_the_line(heads, what):
    from synprep.train.sources.set import set_relations_batch

    good = np.array([2, 0])
    with pytest.raises(ValueError, match=f"line 1 of the batch: .*{what}"):
        set_relations_batch([good, np.array(heads)], [np.zeros(2, int), np.zeros(len(heads), int)], 3)


@pytest.mark.parametrize("gate", ["sigmoid", "tanh"])
def test_set_attention_equals_equations_1_to_3(gate):
    """The batched SET head against eq. 1–3 written pair by pair (subtree mask in half the heads)."""
    cfg = TrainConfig(syntax="pure", syntax_source="set", d_model=16, heads=4, set_rel_dim=6, set_gate=gate,
                      set_max_depth=2)
    torch.manual_seed(0)
    src = source_class("set")(cfg).double()
    heads = [0, 1, 2, 3]
    layer = src.layer_module(0, heads).double()
    for prm in list(src.parameters()) + list(layer.parameters()):
        torch.nn.init.normal_(prm)
    batch = Collater([src])([(0, MONKEY), (1, SHORT)])
    pad = batch.src_tokens.eq(PAD_ID)
    prep = src.prepare(batch.syntax["set"], pad)
    B, T, dh = 2, 8, 4
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(B, 4, T, dh, generator=g, dtype=torch.float64) for _ in range(3))
    x = torch.randn(B, T, 16, generator=g, dtype=torch.float64)
    pb = padding_bias(pad, torch.float64)
    out = gated_heads(q, k, v, sources=["set"] * 4, impls={"set": src}, gate=None, gate_value=1.0, pad_bias=pb,
                      feats={"set": prep}, x=x, modules={"set": layer})
    rel, sub = prep["rel"], prep["subtree_bias"][:, 0] == 0
    E = src.rel_embed.weight
    act = torch.sigmoid if gate == "sigmoid" else torch.tanh
    expected = torch.zeros_like(out)
    for b in range(B):
        for h in range(4):
            s = torch.empty(T, T, dtype=torch.float64)
            for i in range(T):
                for j in range(T):
                    se = q[b, h, i] @ k[b, h, j] / math.sqrt(dh)
                    r = int(rel[b, i, j])
                    if r != NONE:
                        gij = act((x[b, i] @ layer.w_ge[h] + E[r] @ layer.w_gr[h]) @ layer.v_g[h])  # eq. 3
                        se = (1 - gij) * se + gij * (E[r] @ layer.v_r[h])  # eq. 2 with eq. 1
                    masked = pad[b, j] or (h < 2 and not sub[b, i, j])
                    s[i, j] = float("-inf") if masked else se
            expected[b, h] = torch.softmax(s, -1) @ v[b, h]
    real = ~pad
    torch.testing.assert_close(out.permute(0, 2, 1, 3)[real], expected.permute(0, 2, 1, 3)[real], rtol=0, atol=1e-10)
    # level embeddings: depth of each piece's word; </s> and padding share the extra row
    assert batch.syntax["set"]["level"][0].tolist() == [1, 1, 1, 0, 1, 1, 1, 2]  # depths clipped at 1


# --- the sources' presets --------------------------------------------------------------------
SOURCE_PRESETS = ["pascal_iwslt14_de_en", "ldd_iwslt14_de_en", "ldd_parent_iwslt14_de_en", "lisa_iwslt14_de_en",
                  "sla_iwslt14_de_en", "set_iwslt14_de_en"]


@pytest.mark.parametrize("name", SOURCE_PRESETS)
def test_source_presets_cite_every_value_that_differs_from_the_defaults(name):
    import json
    from importlib import resources

    from synprep.train.config import FIELDS

    data = json.loads((resources.files("synprep.presets") / f"{name}.json").read_text("utf-8"))
    cite, fields = data["_cite"], {k: v for k, v in data.items() if not k.startswith("_")}
    assert data["_description"] and set(cite) <= set(fields)
    differ = {k for k, v in fields.items() if v != FIELDS[k].default and not (
        FIELDS[k].default_factory is not dataclasses.MISSING and v == FIELDS[k].default_factory())}
    assert differ <= set(cite), sorted(differ - set(cite))
    cfg = load_preset(name)  # the "_" keys are metadata, not fields
    assert cfg.syntax_source == name.split("_iwslt14")[0]
    assert (cfg.normalize_before, cfg.max_tokens * cfg.update_freq, cfg.activation_dropout) == (True, 16384, 0.1)
    assert cfg.syntax_dropout == 0.0  # none of these papers drops the syntactic attention


def test_no_branch_on_a_source_name_outside_the_sources():
    """Model, collate, attention and config compare no value with a source's name (31 did before the
    registry): a new source must not need an edit there."""
    import ast
    from pathlib import Path

    import synprep.train as pkg

    root = Path(pkg.__file__).parent
    hits = []
    for module in ("model.py", "data.py", "attention.py", "config.py", "loop.py", "masks.py"):
        for node in ast.walk(ast.parse((root / module).read_text("utf-8"))):
            if isinstance(node, ast.Compare):
                consts = [c for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value in SOURCES]
                hits += [f"{module}:{node.lineno}" for _ in consts]
    assert hits == []
