"""synprep's gated syntax-attention Transformer as a fairseq model: ``--arch synprep_gated_transformer_iwslt_de_en``.

Written into an export folder by ``synprep export --format fairseq`` (copied there as
``synprep_fairseq/model.py``, beside synprep's own model modules in ``synprep_fairseq/vendor/``);
it needs only fairseq, torch and numpy. The network is :class:`synprep.train.model.Seq2Seq` itself,
built from those copied modules: the attention, masks, gates and syntax sources are synprep's, and
a synprep checkpoint loads into it (``--synprep-checkpoint``).

Architectures (fairseq ``--arch``):

* ``synprep_gated_transformer_iwslt_de_en``: synprep's ``gated_iwslt14_de_en`` preset (the gated
  paper's IWSLT'14 De→En model: d 512, FFN 1024, 4 heads, 6+6 pre-norm layers, gated SLR in every head);
* ``synprep_gated_transformer``: the same at fairseq's ``transformer`` size (FFN 2048, 8 heads).

Options (mirroring ``synprep train``): ``--synprep-preset NAME`` (another shipped preset as the
base), ``--synprep-system NAME`` (``train --system``: vanilla, gated, slr, pascal, ldd, ldd_parent, lisa,
sla, set, gated-SOURCE), ``--synprep-set KEY=VALUE`` (``train --set``, repeatable, VALUE in JSON),
and fairseq's ``--encoder-embed-dim``, ``--encoder-ffn-embed-dim``, ``--encoder-attention-heads``,
``--encoder-layers``, ``--decoder-layers``, ``--dropout``, ``--attention-dropout`` and
``--activation-dropout`` (one width for encoder and decoder: synprep shares the embeddings).
``--synprep-checkpoint PATH`` takes the configuration and the weights of a synprep checkpoint instead.

The syntax reaches the encoder through ``net_input["syntax"]`` (the task ``syntax_translation`` puts
it there for this model), so ``fairseq-train`` and ``fairseq-generate`` (beam search included) see it;
each syntax source builds its inputs with synprep's own collate from the exported fields. The mean
gate of every gated layer is logged (``gate0``, ``gate1``, …: mean over sentences and heads).
LISA's auxiliary loss is added by ``--criterion synprep_label_smoothed_cross_entropy``.
"""

# ruff: noqa: UP045 - fairseq's dataclass options read typing.Optional, not ``X | None``
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from fairseq.models import (
    FairseqEncoder,
    FairseqEncoderDecoderModel,
    FairseqIncrementalDecoder,
    register_model,
    register_model_architecture,
)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor"))  # synprep's own modules
from synprep.train.batch import Batch  # noqa: E402
from synprep.train.config import config_from_dict, preset_data, system_overrides  # noqa: E402
from synprep.train.model import Seq2Seq  # noqa: E402
from synprep.types import PairRecord  # noqa: E402

#: fairseq option → synprep config key
SIZE_ARGS = {"encoder_embed_dim": "d_model", "encoder_ffn_embed_dim": "ffn_dim", "encoder_attention_heads": "heads",
             "encoder_layers": "encoder_layers", "decoder_layers": "decoder_layers", "dropout": "dropout",
             "attention_dropout": "attention_dropout", "activation_dropout": "activation_dropout"}
#: each architecture's base preset and the sizes it sets over it
ARCHS = {"synprep_gated_transformer_iwslt_de_en": ("gated_iwslt14_de_en", {}),
         "synprep_gated_transformer": ("gated_iwslt14_de_en", {"ffn_dim": 2048, "heads": 8})}
#: the record fields a syntax field of the task fills (the others are left empty)
RECORD_FIELDS = ("word_index", "heads", "deprel", "upos", "sent_start", "gaps_cnf", "gaps_nary", "ldd_dep",
                 "ldd_head", "ldd_rel", "ldd_prob")
PAD_SYNTAX = -1


def synprep_config(args):
    """The synprep ``TrainConfig`` of fairseq's model ``args`` (see the module docstring).

    Raises:
        ValueError: ``--synprep-checkpoint`` with options that would have no effect, or a bad ``--synprep-set``.
    """
    explicit = {key: getattr(args, name) for name, key in SIZE_ARGS.items() if getattr(args, name, None) is not None}
    if getattr(args, "synprep_checkpoint", None):
        given = [o for o in ("synprep_preset", "synprep_system", "synprep_set", *SIZE_ARGS)
                 if getattr(args, o, None) is not None]
        if given:
            raise ValueError("--synprep-checkpoint takes the configuration from the checkpoint: drop "
                             + ", ".join("--" + o.replace("_", "-") for o in given))
        ck = torch.load(args.synprep_checkpoint, map_location="cpu", weights_only=True)
        return config_from_dict(dict(ck["config"]), args.synprep_checkpoint)
    arch = getattr(args, "_name", None) or args.arch
    preset, sizes = ARCHS.get(arch, ARCHS["synprep_gated_transformer"])
    data = preset_data(getattr(args, "synprep_preset", None) or preset)
    while "_alias" in data:
        data = preset_data(data["_alias"])
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    if not getattr(args, "synprep_preset", None):
        data.update(sizes)
    if getattr(args, "synprep_system", None):
        data.update(system_overrides(args.synprep_system))
    data.update(explicit)
    for item in (getattr(args, "synprep_set", None) or "").split():
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--synprep-set {item!r}: expected KEY=VALUE")
        try:
            data[key] = json.loads(value)
        except json.JSONDecodeError:
            data[key] = value
    return config_from_dict(data, f"--arch {arch}")


def right_aligned(tokens, pad):
    """(B, T) tokens with their padding moved to the right (fairseq pads the source on the left)."""
    if not bool(tokens[:, 0].eq(pad).any()):
        return tokens
    B, T = tokens.shape
    n = tokens.ne(pad).sum(1)
    idx = (torch.arange(T, device=tokens.device)[None, :] + (T - n)[:, None]) % T
    return tokens.gather(1, idx)


def syntax_records(tokens, pad, syntax, needed):
    """One ``PairRecord`` per row of right-aligned ``tokens`` from the task's padded syntax fields.

    Raises:
        ValueError: a field in ``needed`` is not in the batch (not loaded: ``--syntax-fields``).
    """
    missing = sorted(set(needed) - set(syntax or {}))
    if missing:
        raise ValueError(f"the model's syntax sources read {', '.join(missing)}: load them "
                         "(--syntax-fields, default all) and train with --task syntax_translation")
    rows = {name: syntax[name].cpu().numpy() for name in RECORD_FIELDS if name in syntax}
    lengths = tokens.ne(pad).sum(1).tolist()
    toks = tokens.cpu().numpy()
    recs = []
    for b, n in enumerate(lengths):
        f = {name: v[b][v[b] != PAD_SYNTAX] for name, v in rows.items()}
        empty = np.zeros(0, dtype=np.int32)
        recs.append(PairRecord(
            line=0, src_ids=toks[b, :n - 1], tgt_ids=empty,
            word_index=f.get("word_index", np.zeros(1, np.int32))[:-1],  # the export appends </s>'s word
            heads=f.get("heads", empty), deprel=f.get("deprel", empty), upos=f.get("upos", empty),
            sent_start=f.get("sent_start", empty), gaps_cnf=f.get("gaps_cnf", np.zeros(1, np.int32))[:-1],
            gaps_nary=f.get("gaps_nary", np.zeros(1, np.int32))[:-1], ldd_dep=f.get("ldd_dep", empty),
            ldd_head=f.get("ldd_head", empty), ldd_rel=f.get("ldd_rel", empty),
            ldd_prob=f.get("ldd_prob", np.zeros(0, np.float32)).astype(np.float32)))
    return recs


class SynprepEncoder(FairseqEncoder):
    """The encoder half of :class:`synprep.train.model.Seq2Seq` (the whole network lives here as ``net``)."""

    def __init__(self, dictionary, net):
        super().__init__(dictionary)
        self.net = net
        self.needed = sorted({f for s in net.sources_map().values() for f in s.record_fields})

    def forward(self, src_tokens, src_lengths=None, syntax=None):
        net = self.net
        tokens = right_aligned(src_tokens, self.dictionary.pad())
        T = tokens.shape[1]
        feats = {}
        if net.sources_used:
            recs = syntax_records(tokens, self.dictionary.pad(), syntax, self.needed)
            feats = {name: _to(src.collate(recs, T), tokens.device) for name, src in net.sources_map().items()}
        none = tokens.new_zeros((tokens.shape[0], 0))
        batch = Batch(ids=none.new_zeros(tokens.shape[0]), src_tokens=tokens, src_lengths=tokens.ne(self.dictionary.pad()).sum(1),
                      prev_tokens=none, target=none, ntokens=0, syntax=feats,
                      src_padded=bool(tokens.eq(self.dictionary.pad()).any()))
        enc = net.encode(batch)
        for layer, g in enc.gates.items():
            metrics.log_scalar(f"gate{layer}", float(g.detach().float().mean()), weight=g.shape[0], round=3)
        return {"enc": enc}

    def reorder_encoder_out(self, encoder_out, new_order):
        return {"enc": encoder_out["enc"].index_select(new_order)}

    def max_positions(self):
        return self.net.cfg.max_positions


def _to(data, device):
    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, tuple):
        return tuple(_to(t, device) for t in data)
    if isinstance(data, dict):
        return {k: _to(t, device) for k, t in data.items()}
    return data


class SynprepDecoder(FairseqIncrementalDecoder):
    """The decoder half of the encoder's ``net`` (held without registering it twice)."""

    def __init__(self, dictionary, encoder):
        super().__init__(dictionary)
        self._encoder = [encoder]  # a list: the parameters are the encoder's, not a second copy

    @property
    def net(self):
        return self._encoder[0].net

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only=False, **kwargs):
        enc = encoder_out["enc"]
        cache = None
        if incremental_state is not None:
            cache = self.get_incremental_state(incremental_state, "cache")
            if cache is None:
                cache = self.net.new_cache()
                self.set_incremental_state(incremental_state, "cache", cache)
        out = self.net.decode(prev_output_tokens, enc, cache=cache, project=not features_only)
        return out, {"attn": None, "gates": enc.gates, "aux_loss": enc.aux_loss}

    def reorder_incremental_state(self, incremental_state, new_order):
        cache = self.get_incremental_state(incremental_state, "cache")
        if cache is not None:
            Seq2Seq.reorder_cache(cache, new_order)

    def max_positions(self):
        return self.net.cfg.max_positions


@dataclass
class SynprepModelConfig(FairseqDataclass):
    synprep_preset: Optional[str] = field(default=None, metadata={"help": "synprep preset the model starts from"})
    synprep_system: Optional[str] = field(default=None, metadata={"help": "as synprep train --system"})
    synprep_set: Optional[str] = field(default=None, metadata={
        "help": "as synprep train --set: space-separated KEY=VALUE, VALUE in JSON"})
    synprep_checkpoint: Optional[str] = field(default=None, metadata={
        "help": "a synprep checkpoint whose configuration and weights the model takes"})
    encoder_embed_dim: Optional[int] = field(default=None, metadata={"help": "synprep's d_model"})
    encoder_ffn_embed_dim: Optional[int] = field(default=None, metadata={"help": "synprep's ffn_dim"})
    encoder_attention_heads: Optional[int] = field(default=None, metadata={"help": "synprep's heads"})
    encoder_layers: Optional[int] = field(default=None, metadata={"help": "synprep's encoder_layers"})
    decoder_layers: Optional[int] = field(default=None, metadata={"help": "synprep's decoder_layers"})
    dropout: Optional[float] = field(default=None, metadata={"help": "synprep's dropout"})
    attention_dropout: Optional[float] = field(default=None, metadata={"help": "synprep's attention_dropout"})
    activation_dropout: Optional[float] = field(default=None, metadata={"help": "synprep's activation_dropout"})


@register_model("synprep_gated_transformer", dataclass=SynprepModelConfig)
class SynprepGatedTransformer(FairseqEncoderDecoderModel):
    """synprep's ``Seq2Seq`` behind fairseq's encoder-decoder interface (see the module docstring)."""

    @classmethod
    def build_model(cls, args, task):
        src, tgt = task.source_dictionary, task.target_dictionary
        if src.symbols != tgt.symbols:
            raise ValueError("synprep's model shares one dictionary between source and target (the export's)")
        cfg = synprep_config(args)
        net = Seq2Seq(cfg, len(src))
        if getattr(args, "synprep_checkpoint", None):
            ck = torch.load(args.synprep_checkpoint, map_location="cpu", weights_only=True)
            net.load_state_dict(ck["model"])
        encoder = SynprepEncoder(src, net)
        return cls(encoder, SynprepDecoder(tgt, encoder))

    #: the task puts the syntax into ``net_input`` for a model that reads it
    reads_syntax = True

    def forward(self, src_tokens, src_lengths, prev_output_tokens, syntax=None, **kwargs):
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, syntax=syntax)
        return self.decoder(prev_output_tokens, encoder_out=encoder_out, **kwargs)

    def max_positions(self):
        return (self.net_cfg.max_positions, self.net_cfg.max_positions)

    @property
    def net_cfg(self):
        return self.encoder.net.cfg


@register_model_architecture("synprep_gated_transformer", "synprep_gated_transformer_iwslt_de_en")
def synprep_gated_transformer_iwslt_de_en(args):
    pass  # the sizes come from the preset (ARCHS), so that an explicit option can be told from a default


@register_criterion("synprep_label_smoothed_cross_entropy", dataclass=LabelSmoothedCrossEntropyCriterionConfig)
class SynprepLabelSmoothedCrossEntropy(LabelSmoothedCrossEntropyCriterion):
    """fairseq's label-smoothed cross-entropy plus the model's auxiliary loss (LISA), as synprep's trainer adds it."""

    def compute_loss(self, model, net_output, sample, reduce=True):
        loss, nll_loss = super().compute_loss(model, net_output, sample, reduce=reduce)
        aux = net_output[1].get("aux_loss") if isinstance(net_output[1], dict) else None
        return (loss if aux is None else loss + aux.float()), nll_loss
