# The embedded default main job: sample_data/ (de→en, written for this project) through the whole
# pipeline with the small offline stanza models, then `synprep check`. Output in build/sample/.
SAMPLE_OUT   ?= build/sample
SAMPLE_SRC   ?= de
SAMPLE_TGT   ?= en
STANZA_DIR   ?= $(SHARED)/data/stanza_resources
STANZA_PKG   ?= synprep
SAMPLE_FLAGS ?= --lowercase --merges 2000 --shard-size 100

.PHONY: sample

sample: setup
	for split in train valid test; do
	  $(SYNPREP) pipeline --split $$split --src sample_data/$$split.$(SAMPLE_SRC) --tgt sample_data/$$split.$(SAMPLE_TGT) \
	    -s $(SAMPLE_SRC) -t $(SAMPLE_TGT) --out $(SAMPLE_OUT) $(SAMPLE_FLAGS) \
	    --stanza-dir $(STANZA_DIR) --stanza-package $(STANZA_PKG) -j $(JOBS)
	done
	$(SYNPREP) check $(SAMPLE_OUT)
