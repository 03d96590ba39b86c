"""``grpo check`` (gold self-test, hacking probes), the preflight analysis, the reward manifest."""
