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
# steps and preset), each translated on test2016, then `synprep compare` over exactly those runs:
# BLEU mean ± sd per system, Welch's t-test over the seeds, per-seed and concatenated paired
# bootstrap / approximate randomization p-values against the first system (the baseline).
# A system name is what `synprep train --system NAME` applies on top of M30K_SEED_TRAIN: vanilla,
# gated, a registered syntax source as its paper uses it (slr pascal ldd ldd_parent lisa sla set)
# or gated-SOURCE; an unknown name is refused (docs/train.md). Its settings live in synprep, not here.
# One run = one folder $(M30K_SEEDS_OUT)/SYSTEM.seedN holding make.config.json, the resolved config
# it was started with; finished runs are skipped, and a folder whose config is not what its name
# resolves to now (another system, preset or step count under the same name, or a run made before
# this check) is refused, never relabelled. make -j N runs N at once.
M30K_SEEDS      ?= 1 2 3
M30K_SYSTEMS    ?= vanilla gated
M30K_SEEDS_OUT  ?= $(M30K_OUT)/seeds
M30K_SEED_STEPS ?= $(M30K_STEPS)
M30K_SEED_TRAIN ?= --preset cpu_small --max-steps $(M30K_SEED_STEPS)
M30K_RUN_DIRS := $(foreach s,$(M30K_SYSTEMS),$(foreach n,$(M30K_SEEDS),$(M30K_SEEDS_OUT)/$(s).seed$(n)))
M30K_RUNS := $(addsuffix /test.hyp,$(M30K_RUN_DIRS))
M30K_CONFIGS := $(addsuffix .config.json,$(M30K_RUN_DIRS))
m30k_system = $(firstword $(subst .seed, ,$(1)))
m30k_seed = $(lastword $(subst .seed, ,$(1)))

.PHONY: multi30k-seeds m30k-always
.SECONDARY: $(M30K_CONFIGS)
m30k-always:

# the config SYSTEM.seedN resolves to (rewritten only when it changes: a change re-checks the run)
$(M30K_SEEDS_OUT)/%.config.json: m30k-always | setup
	mkdir -p $(@D)
	$(SYNPREP) train $(M30K_SEED_TRAIN) --seed $(call m30k_seed,$*) --system $(call m30k_system,$*) --print-config > $@.tmp \
	  || { rm -f $@.tmp; exit 1; }
	if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

$(M30K_SEEDS_OUT)/%/test.hyp: $(M30K_SEEDS_OUT)/%.config.json
	run=$(M30K_SEEDS_OUT)/$*
	if [ -d $$run ] && ! cmp -s $< $$run/make.config.json; then
	  echo "multi30k-seeds: $$run was not started with the config '$*' resolves to now ($<): delete it or set another M30K_SEEDS_OUT" >&2
	  exit 1
	fi
	mkdir -p $$run
	cp $< $$run/make.config.json
	if [ -f $$run/checkpoint_last.pt ]; then  # an interrupted run continues exactly
	  $(SYNPREP) train --shards $(M30K_OUT)/shards --out $$run --resume --max-steps $(M30K_SEED_STEPS) >> $$run.log 2>&1
	else
	  $(SYNPREP) train --shards $(M30K_OUT)/shards $(M30K_SEED_TRAIN) --seed $(call m30k_seed,$*) \
	    --system $(call m30k_system,$*) --out $$run > $$run.log 2>&1
	fi
	$(SYNPREP) translate --checkpoint $$run/checkpoint_best.pt --shards $(M30K_OUT)/shards --split test \
	  -o $$run/test.hyp.tmp --lines-out $$run/test.lines 2>> $$run.log
	mv $$run/test.hyp.tmp $$run/test.hyp

# only the listed systems and seeds: runs of systems no longer listed are not compared
multi30k-seeds: setup $(M30K_RUNS)
	$(SYNPREP) compare $(addsuffix /,$(M30K_RUN_DIRS)) --ref $(M30K_OUT)/shards/text/test.tok.en --lang en --lowercase \
	  --baseline $(firstword $(M30K_SYSTEMS)) --json $(M30K_SEEDS_OUT)/compare.json -o $(M30K_SEEDS_OUT)/compare.md
	cat $(M30K_SEEDS_OUT)/compare.md
