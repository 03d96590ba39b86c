"""What :class:`~grpo_core.trainer.trainer.GrpoTrainer` adds to TRL's trainer, as one
value: each feature's settings, typed and frozen. The builder derives them from the
config (:func:`grpo_core.run.builder.features_of`, the one place); each feature is a
module of its own, testable without a trainer:

============================  =================================================
``sampling``                  fast sampling (:mod:`grpo_core.trainer.decoding`)
``guard``                     the non-finite guard (:mod:`grpo_core.trainer.nonfinite`)
``rewards``                   the reward failure policy, for the rewards TRL adds
                              (:mod:`grpo_core.rewards.policy`); None: unguarded
``environment_rewards``       each environment's reward column, named and weighed
                              (:mod:`grpo_core.trainer.reward_columns`)
``dynamic``                   dynamic sampling (:mod:`grpo_core.trainer.dynamic`); None: off
``rollout_log``               the rollout log (:mod:`grpo_core.trainer.rollout_log`); None: off
``resume``                    exact resume (:mod:`grpo_core.trainer.exact_resume`)
``trainable``                 the dtype trainable weights are cast to (pure low
                              precision: the adapters too); None: as loaded
``learning``                  the learning method and what it judges groups on
                              (:mod:`grpo_core.trainer.chain`, :mod:`grpo_core.trainer.methods`)
``shared_prompt``             each group's prompt computed once in the training pass
                              (:mod:`grpo_core.trainer.shared_prompt`): false, true or auto
``prompts``                   the prompt sampler (:mod:`grpo_core.trainer.prompts`,
                              :mod:`grpo_core.trainer.samplers`); None: TRL's own
============================  =================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from grpo_core.rewards.policy import PolicySettings
from grpo_core.trainer.chain import LearningSettings
from grpo_core.trainer.decoding import Sampling
from grpo_core.trainer.dynamic import DynamicSettings
from grpo_core.trainer.exact_resume import ResumeSettings
from grpo_core.trainer.nonfinite import GuardSettings
from grpo_core.trainer.prompts import PromptSettings
from grpo_core.trainer.rollout_log import RolloutLogSettings


@dataclass(frozen=True)
class Features:
    """The trainer's features and their settings (the defaults: all off but the guard)."""

    sampling: Sampling = Sampling()
    guard: GuardSettings = GuardSettings()
    rewards: PolicySettings | None = None
    # {TRL's environment key (None, or the route): (logged name, weight)}
    environment_rewards: Mapping = field(default_factory=dict, compare=False)
    dynamic: DynamicSettings | None = None
    rollout_log: RolloutLogSettings | None = None
    resume: ResumeSettings = ResumeSettings()
    trainable: str | None = None
    learning: LearningSettings = LearningSettings()
    shared_prompt: bool | str = False
    prompts: PromptSettings | None = None


__all__ = ["Features", "Sampling", "GuardSettings", "PolicySettings", "DynamicSettings", "RolloutLogSettings",
           "ResumeSettings", "LearningSettings", "PromptSettings"]
