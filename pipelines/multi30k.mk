# Multi30k de→en (image captions, 29k training pairs): the pipeline with the offline stanza models,
# then a gated and a vanilla model trained on the CPU for the same number of steps, test2016 BLEU
# for both, and the gate heatmap (build/multi30k/gated/gates.png). See README "Multi30k".
M30K_DIR   ?= $(SHARED)/data/multi30k
M30K_OUT   ?= build/multi30k
M30K_STEPS ?= 1500
M30K_ARGS  ?= --lowercase --merges 4000 --stanza-dir $(SHARED)/data/stanza_resources --stanza-package synprep -j $(JOBS)
M30K_TRAIN ?= --preset cpu_small --max-steps $(M30K_STEPS)
# first N training pairs only (0: all 29000); parsing 29k sentences on a shared 2-core CPU takes long
M30K_TRAIN_PAIRS ?= 0

.PHONY: multi30k multi30k-prep multi30k-train

multi30k-prep: setup
	mkdir -p $(M30K_OUT)/raw
	for f in train val test_2016_flickr; do
	  for l in de en; do gzip -dc $(M30K_DIR)/$$f.$$l.gz > $(M30K_OUT)/raw/$$f.$$l; done
	done
	if [ "$(M30K_TRAIN_PAIRS)" != 0 ]; then
	  for l in de en; do head -n $(M30K_TRAIN_PAIRS) $(M30K_OUT)/raw/train.$$l > $(M30K_OUT)/raw/train.$$l.tmp; mv $(M30K_OUT)/raw/train.$$l.tmp $(M30K_OUT)/raw/train.$$l; done
	fi
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

# ---------------------------------------------------------------------------------------------
# multi30k-seeds: every system in M30K_SYSTEMS over every seed in M30K_SEEDS (the same shards,
# steps and preset), each translated on test2016, then `synprep compare`: BLEU mean ± sd per system
# and paired bootstrap / approximate randomization p-values against the first system (the baseline).
# One run = one folder $(M30K_SEEDS_OUT)/SYSTEM.seedN; finished runs are skipped (make -j N runs N at once).
M30K_SEEDS      ?= 1 2 3
M30K_SYSTEMS    ?= vanilla gated
M30K_SEEDS_OUT  ?= $(M30K_OUT)/seeds
M30K_SEED_STEPS ?= $(M30K_STEPS)
M30K_SEED_TRAIN ?= --preset cpu_small --max-steps $(M30K_SEED_STEPS)
# per-system overrides of the cpu_small preset
M30K_SYS_vanilla ?= --set syntax=vanilla
M30K_SYS_gated   ?=
M30K_SYS_slr     ?= --set syntax=hard --set syntax_layers=[0] --set syntax_dropout=0.0
M30K_SYS_pascal  ?= --set syntax_source=pascal
M30K_SYS_ldd     ?= --set syntax_source=ldd
M30K_RUNS := $(foreach s,$(M30K_SYSTEMS),$(foreach n,$(M30K_SEEDS),$(M30K_SEEDS_OUT)/$(s).seed$(n)/test.hyp))

.PHONY: multi30k-seeds

$(M30K_SEEDS_OUT)/%/test.hyp:
	run=$(M30K_SEEDS_OUT)/$*
	mkdir -p $(M30K_SEEDS_OUT)
	if [ -f $$run/checkpoint_last.pt ]; then  # an interrupted run continues exactly
	  $(SYNPREP) train --shards $(M30K_OUT)/shards --out $$run --resume --max-steps $(M30K_SEED_STEPS) >> $$run.log 2>&1
	else
	  $(SYNPREP) train --shards $(M30K_OUT)/shards $(M30K_SEED_TRAIN) --seed $(lastword $(subst .seed, ,$*)) \
	    $(M30K_SYS_$(firstword $(subst .seed, ,$*))) --out $$run > $$run.log 2>&1
	fi
	$(SYNPREP) translate --checkpoint $$run/checkpoint_best.pt --shards $(M30K_OUT)/shards --split test \
	  -o $$run/test.hyp.tmp --lines-out $$run/test.lines 2>> $$run.log
	mv $$run/test.hyp.tmp $$run/test.hyp

multi30k-seeds: setup $(M30K_RUNS)
	$(SYNPREP) compare $(M30K_SEEDS_OUT)/*.seed*/ --ref $(M30K_OUT)/shards/text/test.tok.en --lang en --lowercase \
	  --baseline $(firstword $(M30K_SYSTEMS)) --json $(M30K_SEEDS_OUT)/compare.json -o $(M30K_SEEDS_OUT)/compare.md
	cat $(M30K_SEEDS_OUT)/compare.md
