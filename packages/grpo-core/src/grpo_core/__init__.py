"""grpo-core: GRPO fine-tuning on TRL with rewards and datasets found by name.

Importing this package is cheap: torch, trl and datasets load only when a
command or function needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grpo_core.base.errors import (
    DuplicateNameError,
    GrpoError,
    MissingColumnError,
    PluginError,
    PluginWarning,
    RewardParamError,
    SpecError,
    UnknownNameError,
)
from grpo_core.base.text import completion_text, text_reward
from grpo_core.base.version import __version__
from grpo_core.data.datasets import (
    build_prompt,
    build_prompts,
    check_columns,
    list_datasets,
    list_system_prompts,
    load_dataset,
)
from grpo_core.hookspecs import hookimpl
from grpo_core.plugin.api import PLUGIN_API, PluginDeprecationWarning
from grpo_core.rewards.reward import (
    Reward,
    RewardSpec,
    compose_rewards,
    get_reward,
    list_rewards,
    parse_spec,
)

__all__ = [
    "__version__",
    "hookimpl",
    "PLUGIN_API",
    "PluginDeprecationWarning",
    "list_rewards",
    "get_reward",
    "compose_rewards",
    "parse_spec",
    "Reward",
    "RewardSpec",
    "list_datasets",
    "load_dataset",
    "list_system_prompts",
    "list_environments",
    "get_environment",
    "build_prompt",
    "build_prompts",
    "check_columns",
    "completion_text",
    "text_reward",
    "GrpoError",
    "PluginError",
    "PluginWarning",
    "DuplicateNameError",
    "UnknownNameError",
    "SpecError",
    "RewardParamError",
    "MissingColumnError",
]


if TYPE_CHECKING:  # type checkers see them as imported; a misspelt name is an error to them
    from grpo_core.rewards.environments import get_environment, list_environments
else:
    def __getattr__(name: str):
        """``list_environments`` and ``get_environment``, imported when first used (the
        environments module costs a listing command's start-up otherwise)."""
        if name in ("list_environments", "get_environment"):
            from grpo_core.rewards import environments

            return getattr(environments, name)
        raise AttributeError(f"module 'grpo_core' has no attribute {name!r}")
