# Multi30k de→en (image captions, 29k training pairs): the pipeline with the offline stanza models,
# then a gated and a vanilla model trained on the CPU for the same number of steps, test2016 BLEU
# for both, and the gate heatmap (build/multi30k/gated/gates.png). See README "Multi30k".
M30K_DIR   ?= $(SHARED)/data/multi30k
M30K_OUT   ?= build/multi30k
M30K_STEPS ?= 1500
M30K_ARGS  ?= --lowercase --merges 4000 --stanza-dir $(SHARED)/data/stanza_resources --stanza-package synprep -j $(JOBS)
M30K_TRAIN ?= --preset cpu_small --max-steps $(M30K_STEPS)

.PHONY: multi30k multi30k-prep multi30k-train

multi30k-prep: setup
	mkdir -p $(M30K_OUT)/raw
	for f in train val test_2016_flickr; do
	  for l in de en; do gzip -dc $(M30K_DIR)/$$f.$$l.gz > $(M30K_OUT)/raw/$$f.$$l; done
	done
	$(SYNPREP) pipeline --split train --src $(M30K_OUT)/raw/train.de --tgt $(M30K_OUT)/raw/train.en -s de -t en --out $(M30K_OUT)/shards $(M30K_ARGS)
	$(SYNPREP) pipeline --split valid --src $(M30K_OUT)/raw/val.de --tgt $(M30K_OUT)/raw/val.en -s de -t en --out $(M30K_OUT)/shards $(M30K_ARGS)
	$(SYNPREP) pipeline --split test --src $(M30K_OUT)/raw/test_2016_flickr.de --tgt $(M30K_OUT)/raw/test_2016_flickr.en -s de -t en --out $(M30K_OUT)/shards $(M30K_ARGS)

# the two models train side by side, one core each
multi30k-train: setup
	$(SYNPREP) train --shards $(M30K_OUT)/shards $(M30K_TRAIN) --out $(M30K_OUT)/gated > $(M30K_OUT)/gated.log 2>&1 & g=$$!
	$(SYNPREP) train --shards $(M30K_OUT)/shards $(M30K_TRAIN) --set syntax=vanilla --out $(M30K_OUT)/vanilla > $(M30K_OUT)/vanilla.log 2>&1 & v=$$!
	wait $$g; wait $$v
	for m in gated vanilla; do
	  $(SYNPREP) translate --checkpoint $(M30K_OUT)/$$m/checkpoint_best.pt --shards $(M30K_OUT)/shards --split test \
	    -o $(M30K_OUT)/$$m/test.hyp --lines-out $(M30K_OUT)/$$m/test.lines
	  $(SYNPREP) evaluate --hyp $(M30K_OUT)/$$m/test.hyp --ref $(M30K_OUT)/shards/text/test.tok.en \
	    --ref-lines $(M30K_OUT)/$$m/test.lines --lang en --lowercase --json > $(M30K_OUT)/$$m/bleu.json
	  echo "$$m: $$(cat $(M30K_OUT)/$$m/bleu.json)"
	done

multi30k: multi30k-prep multi30k-train
