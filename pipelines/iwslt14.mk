# IWSLT14 de-en: fairseq's prepare-iwslt14.sh, then annotate, train, translate, BLEU.
#
#   make iwslt14                      download de-en.tgz (fairseq's mirror) and prepare it
#   make iwslt14 ORIG=path/de-en.tgz  (or a folder holding the WIT3 files) without downloading
#   make iwslt14-test                 the test split from $(SHARED)/data with fairseq's own codes,
#                                     checked byte for byte against fairseq's prepared files
IWSLT14_OUT      ?= build/iwslt14
IWSLT14_URL      ?= http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz
IWSLT14_TGZ      ?= build/downloads/de-en.tgz
ORIG             ?=
IWSLT14_TEST_OUT ?= build/iwslt14-test
IWSLT14_SHARED   ?= $(SHARED)/data/iwslt14_de-en

.PHONY: iwslt14-prep iwslt14-test-prep

iwslt14-prep: setup
	orig="$(ORIG)"
	if [ -z "$$orig" ]; then
	  orig="$(IWSLT14_TGZ)"
	  if [ ! -s "$$orig" ]; then
	    mkdir -p "$$(dirname "$$orig")"
	    echo "Downloading $(IWSLT14_URL) ..." >&2
	    if command -v curl >/dev/null; then curl -fL --retry 3 -o "$$orig.part" "$(IWSLT14_URL)"
	    else wget -O "$$orig.part" "$(IWSLT14_URL)"; fi
	    mv "$$orig.part" "$$orig"
	  fi
	fi
	$(SYNPREP) iwslt14 --orig "$$orig" --out $(IWSLT14_OUT) -j $(JOBS)

iwslt14-test-prep: setup
	$(SYNPREP) iwslt14 --orig $(IWSLT14_SHARED)/orig --splits test \
	  --codes $(IWSLT14_SHARED)/fairseq_prepared/code --out $(IWSLT14_TEST_OUT) -j $(JOBS)
	for f in tmp/test.de tmp/test.en test.de test.en; do
	  cmp $(IWSLT14_TEST_OUT)/$$f $(IWSLT14_SHARED)/fairseq_prepared/$$f
	done
	echo "iwslt14-test-prep: test split byte-identical to fairseq's prepare-iwslt14.sh" >&2

IWSLT14_PARSE   ?= --stanza-dir $(SHARED)/data/stanza_resources --stanza-package synprep
IWSLT14_DEVICE  ?= cuda
IWSLT14_STEPS   ?= 50

# The full recipe: prepare (fairseq's script, step for step) → annotate the three splits (the parser reads
# the cased tokenized text, tmp/SPLIT.cased.de, fairseq's BPE'd text is lowercased) → train the
# paper's IWSLT14 De→En configuration → translate the test set with the last 10 epochs averaged (the
# paper's Tables 4-6) → BLEU. Needs the training data (the
# download, or ORIG=) and, for the paper's configuration, a GPU: each step says clearly when it cannot run.
# IWSLT14_PARSE picks the stanza models (default: the small offline ones; set it empty for stanza's own).
iwslt14: iwslt14-prep
	for split in train valid test; do
	  $(SYNPREP) annotate --split $$split --src $(IWSLT14_OUT)/$$split.de --tgt $(IWSLT14_OUT)/$$split.en \
	    --parse-src $(IWSLT14_OUT)/tmp/$$split.cased.de -s de -t en --out $(IWSLT14_OUT)/shards $(IWSLT14_PARSE) -j $(JOBS)
	done
	$(SYNPREP) train --shards $(IWSLT14_OUT)/shards --preset gated_iwslt14_de_en --out $(IWSLT14_OUT)/gated --device $(IWSLT14_DEVICE)
	$(SYNPREP) translate --checkpoint $(IWSLT14_OUT)/gated/checkpoint_last.pt --average-last 10 --shards $(IWSLT14_OUT)/shards --split test \
	  --device $(IWSLT14_DEVICE) -o $(IWSLT14_OUT)/gated/test.hyp --lines-out $(IWSLT14_OUT)/gated/test.lines
	$(SYNPREP) evaluate --hyp $(IWSLT14_OUT)/gated/test.hyp --ref $(IWSLT14_OUT)/tmp/test.en \
	  --ref-lines $(IWSLT14_OUT)/gated/test.lines --lang en

# Every step that runs offline, on the test split alone: the byte-identical preparation, annotation
# of the 6750 pairs, a short CPU training of the tiny preset (train = valid = test: a smoke run, not
# a result), translation and BLEU.
iwslt14-test: iwslt14-test-prep
	$(SYNPREP) annotate --split test --vocab-split test --src $(IWSLT14_TEST_OUT)/test.de --tgt $(IWSLT14_TEST_OUT)/test.en \
	  --parse-src $(IWSLT14_TEST_OUT)/tmp/test.cased.de -s de -t en --out $(IWSLT14_TEST_OUT)/shards \
	  $(IWSLT14_PARSE) -j $(JOBS)
	$(SYNPREP) train --shards $(IWSLT14_TEST_OUT)/shards --preset tiny --train-split test --valid-split test \
	  --max-steps $(IWSLT14_STEPS) --out $(IWSLT14_TEST_OUT)/tiny --device cpu
	$(SYNPREP) translate --checkpoint $(IWSLT14_TEST_OUT)/tiny/checkpoint_last.pt --shards $(IWSLT14_TEST_OUT)/shards \
	  --split test --beam 1 -o $(IWSLT14_TEST_OUT)/tiny/test.hyp --lines-out $(IWSLT14_TEST_OUT)/tiny/test.lines
	$(SYNPREP) evaluate --hyp $(IWSLT14_TEST_OUT)/tiny/test.hyp --ref $(IWSLT14_TEST_OUT)/tmp/test.en \
	  --ref-lines $(IWSLT14_TEST_OUT)/tiny/test.lines --lang en
