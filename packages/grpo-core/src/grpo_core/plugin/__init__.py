"""The plugin manager (pluggy) and the registry of what plugins register."""
