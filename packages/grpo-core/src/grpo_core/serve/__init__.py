"""Floor 8: rewards beyond one trainer process: the reward server (grpo serve) and verl's compute_score."""
