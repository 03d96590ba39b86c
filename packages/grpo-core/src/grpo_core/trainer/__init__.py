"""The trainer and its features: ``GrpoTrainer`` (TRL's ``GRPOTrainer`` with what a
real run needs), one training batch as a chain (:mod:`.batch`), learning methods
(:mod:`.methods`), fast and merged sampling, dynamic sampling, the rollout log, the
non-finite guard, exact resume."""
