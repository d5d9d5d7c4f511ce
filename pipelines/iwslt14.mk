# IWSLT14 de-en: fairseq's prepare-iwslt14.sh, then annotate, train, translate, BLEU.
IWSLT14_OUT ?= build/iwslt14

iwslt14: setup
	@echo "iwslt14: not wired yet" >&2

iwslt14-test: setup
	@echo "iwslt14-test: not wired yet" >&2
