# Parallel UD (1000 en/de sentences with gold trees) in both directions, through the CoNLL-U import
# (gold trees) and through stanza (offline models), each ending with `synprep check`; then stanza's
# UAS/LAS on English PUD against the gold trees (benchmarks/parse_pud.py).
PUD_DIR  ?= $(SHARED)/data/ud
PUD_OUT  ?= build/pud
PUD_ARGS ?= --merges 2000 --shard-size 500 -j $(JOBS)
# the parser's options: an error with --parser conllu, where no parser runs
PUD_STANZA ?= --stanza-dir $(SHARED)/data/stanza_resources --stanza-package synprep

.PHONY: pud pud-text

pud-text:
	mkdir -p $(PUD_OUT)
	for l in en de; do
	  sed -n 's/^# text = //p' $(PUD_DIR)/$${l}_pud-ud-test.conllu > $(PUD_OUT)/pud.$$l
	done

pud: setup pud-text
	for pair in en-de de-en; do
	  s=$${pair%-*}; t=$${pair#*-}
	  $(SYNPREP) pipeline --src $(PUD_OUT)/pud.$$s --tgt $(PUD_OUT)/pud.$$t -s $$s -t $$t \
	    --out $(PUD_OUT)/stanza-$$pair $(PUD_ARGS) $(PUD_STANZA)
	  $(SYNPREP) pipeline --parser conllu --conllu $(PUD_DIR)/$${s}_pud-ud-test.conllu --tgt $(PUD_OUT)/pud.$$t \
	    -s $$s -t $$t --out $(PUD_OUT)/gold-$$pair $(PUD_ARGS)
	done
	$(PY) benchmarks/parse_pud.py --shared $(SHARED)/data --package synprep
