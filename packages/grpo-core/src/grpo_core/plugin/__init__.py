"""Floor 1: the plugin manager (pluggy) and the registry of what plugins register."""
