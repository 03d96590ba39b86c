"""Floor 2: a reward bound to its parameters, specs, gates, local reward files, the failure policy, scoring, environments."""
