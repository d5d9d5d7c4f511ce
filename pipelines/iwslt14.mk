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

iwslt14: iwslt14-prep
	@echo "iwslt14: annotate/train steps not wired yet (prepared data in $(IWSLT14_OUT))" >&2

iwslt14-test: iwslt14-test-prep
	@echo "iwslt14-test: annotate/train steps not wired yet (prepared data in $(IWSLT14_TEST_OUT))" >&2
