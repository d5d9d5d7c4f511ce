"""Shipped trainer presets (JSON, loaded by :func:`synprep.train.config.load_preset`)."""
