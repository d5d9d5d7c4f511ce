"""The spaCy peer of ``synprep parse --parser spacy``: plain ``spacy.load(MODEL).pipe`` over pretokenized docs.

    python benchmarks/_peer_spacy.py MODEL WORDS OUT [--lang en] [--batch-size 64]

WORDS holds one sentence per line, words separated by spaces. The pipeline is loaded without the
components whose output synprep does not keep (ner, lemmatizer: what a user who wants parses leaves out),
each line becomes ``Doc(vocab, words, spaces, sent_starts)`` like synprep's, and the docs go through
``nlp.pipe``. OUT gets ``ID FORM UPOS HEAD DEPREL`` per word (tab-separated, a blank line after each
sentence): the spaCy labels as spaCy gives them.
"""

from __future__ import annotations

import argparse

import spacy
from spacy.tokens import Doc

NO_SPACE = ("ja", "zh", "th")
LEFT_OUT = ("ner", "lemmatizer", "senter", "sentencizer", "textcat", "entity_ruler")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("words")
    ap.add_argument("out")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    nlp = spacy.load(args.model, exclude=list(LEFT_OUT))
    space = args.lang not in NO_SPACE
    with open(args.words, encoding="utf-8") as f:
        sentences = [line.split() for line in f]

    def docs():
        for words in sentences:
            n = len(words)
            yield Doc(nlp.vocab, words=words, spaces=[space and i + 1 < n for i in range(n)],
                      sent_starts=[i == 0 for i in range(n)])

    with open(args.out, "w", encoding="utf-8") as out:
        for doc in nlp.pipe(docs(), batch_size=args.batch_size):
            for t in doc:
                head = 0 if t.head.i == t.i else t.head.i + 1
                out.write(f"{t.i + 1}\t{t.text}\t{t.pos_}\t{head}\t{t.dep_}\n")
            out.write("\n")


if __name__ == "__main__":
    main()
