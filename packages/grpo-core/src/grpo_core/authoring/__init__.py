"""Floor 7: for plugin authors: the reward contract suite, the plugin scaffold, tiny test models."""
