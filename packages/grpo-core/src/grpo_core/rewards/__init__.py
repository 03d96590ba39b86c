"""A reward bound to its parameters, specs, gates, local reward files, the failure policy, scoring, environments."""
