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

# --- word segmentation ----------------------------------------------------------------------
#: ``--tokenizer`` choices: sacremoses, or the parser's own tokenizer (synprep.text.parser_tokenize)
TOKENIZERS = ("moses", "parser")
