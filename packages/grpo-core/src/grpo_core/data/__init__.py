"""Dataset adapters, local and hub files, prompts, the pass-rate filter, the core's own default plugin."""
