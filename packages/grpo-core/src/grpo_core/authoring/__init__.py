"""For plugin authors: the reward contract suite, the plugin scaffold, tiny test models."""
