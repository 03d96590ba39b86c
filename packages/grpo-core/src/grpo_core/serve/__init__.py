"""Rewards beyond one trainer process: the reward server (grpo serve) and verl's compute_score."""
