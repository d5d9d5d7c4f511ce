"""synprep: syntax-annotated training data for syntax-aware NMT, and the gated syntax-attention Transformer.

Stages (one module each): text (tokenize, clean, BPE), parse (stanza, CoreNLP, CoNLL-U and
bracketed-tree import), align (subword → word), features (syntactic distance, SLR masks,
parent positions, LDD, tree relations), shards (HDF5), train (the gated model).
The conventions are fixed by SPEC.md (shipped beside the project as ../shared/SPEC.md) and
summarised in docs/.
"""

__version__ = "0.1.0"
