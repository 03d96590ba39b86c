"""Preparing, building and running training: the run before any model loads, the trainer built from the config, outputs, resume rules, held-out accuracy."""
