# The embedded default main job on sample_data/ (see README "Main job").
SAMPLE_OUT ?= build/sample

sample: setup
	@echo "sample: not wired yet" >&2
