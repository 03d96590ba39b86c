"""Reading a run: the rollout log's filters (``grpo rollouts``, ``grpo view``) and the
browser view of one or more run directories (``grpo view``)."""
