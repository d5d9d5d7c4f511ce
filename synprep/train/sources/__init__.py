"""Syntax sources of the encoder's syntactic heads: a registry of name → ``"module:Class"``.

A *syntax source* turns the source-side syntax stored in the shards into what a syntactic head
attends with: an additive bias (SLR, SLA), a multiplier of the scores (PASCAL, LDD, the LDD
paper's 1-best parent matrix), relation scores and a gate (SET), or an auxiliary loss on the
head's own attention (LISA/SISA). Each is one module with one :class:`~synprep.train.sources.base.SyntaxSource`
subclass that declares the shard fields it reads, how it collates, how it enters attention and its
paper's defaults. The modules are imported only when a configuration names them.

Adding a source = one module under ``synprep/train/sources/`` and one line in :data:`SOURCES`
(:mod:`synprep.train.source_registry`, re-exported here). The
registry names each source's configuration side (:mod:`synprep.train.sources.specs`, no torch: a
:class:`~synprep.train.config.TrainConfig` is built and checked without it), which names its module; a
new source may register its ``SyntaxSource`` subclass directly (it then is its own spec).
"""

from synprep.train.source_registry import SOURCES, SourceOption, source_class, source_options, spec_class

__all__ = ["SOURCES", "SourceOption", "source_class", "source_options", "spec_class"]
