"""Constants shared by every stage: special gaps, vocabulary specials, format names.

Sources: SPEC.md §2 (special gaps), §5 (shards); fairseq's Dictionary for the special symbols.
"""

from __future__ import annotations

# --- syntactic distance, SPEC.md §2 ---------------------------------------------------------
#: gap between two pieces of one word
GAP_INTRA_WORD = 1
#: gap between two sentences of one source line
GAP_SENTENCE = 999
#: gap between the last token and </s> (appended by the trainer, never stored)
GAP_EOS = 2000

#: the gap modes (``gaps_cnf``, ``gaps_nary``): the right-factored binarized tree's (the reference data) and
#: the n-ary tree's (the papers' Algorithm 1)
GAP_MODES = ("cnf", "nary")

#: the devices a parser or the parse stage runs on (``cuda``: each worker takes one visible GPU)
DEVICES = ("cpu", "cuda")

# --- vocabulary (fairseq's Dictionary order) ------------------------------------------------
BOS, PAD, EOS, UNK = "<s>", "<pad>", "</s>", "<unk>"
SPECIAL_SYMBOLS = (BOS, PAD, EOS, UNK)
BOS_ID, PAD_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

#: subword-nmt's continuation marker ("ri@@ ver")
BPE_SEPARATOR = "@@"

# --- shards, SPEC.md §5 and docs/FORMAT.md --------------------------------------------------
SHARD_FORMAT = "synprep-shard"
SHARD_FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
VOCAB_NAME = "dict.txt"

#: Moses escapes (sacremoses escape=True) and what they stand for
MOSES_ESCAPES = {
    "&amp;": "&",
    "&#124;": "|",
    "&lt;": "<",
    "&gt;": ">",
    "&apos;": "'",
    "&quot;": '"',
    "&#91;": "[",
    "&#93;": "]",
}

#: the most pairs one shard may hold or declare (readers refuse more: a hostile shard; docs/shards.md)
MAX_SHARD_PAIRS = 1 << 24
#: the most data one shard may hold or declare, in bytes as stored (decompressed): every dataset's
#: entries × item size, offsets and line numbers included. Readers refuse more before reading any
#: (``train`` and ``show`` hold a shard's data whole, ``check`` several times it: a deflate bomb of a
#: few MB must not become GBs), the writer refuses to write more (use a smaller ``--shard-size``).
#: A real shard of the default 10000 pairs holds ~7.75 MB (IWSLT14 test, stanza, LDD 0.01: 775 bytes
#: a pair); even 10000 pairs of 175 pieces with 5 LDD arcs a word (~6.5 KB a pair, 65 MB) fit.
MAX_SHARD_BYTES = 1 << 27

# --- word segmentation ----------------------------------------------------------------------
#: ``--tokenizer`` choices: sacremoses, or the parser's own tokenizer (synprep.parse.tokenize)
TOKENIZERS = ("moses", "parser")

#: the longest word (in characters) any parser or imported parse is given; a line holding a longer one is
#: dropped as ``parse:word_too_long`` (the train split's cleaning drops such lines already, as
#: clean-corpus-n.perl's ``-max-word-length`` 1000): a 100 KB token made stanza take gigabytes
MAX_WORD_CHARS = 1000
