"""grpo-core: GRPO fine-tuning on TRL with rewards and datasets found by name.

Importing this package is cheap: torch, trl and datasets load only when a
command or function needs them.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .data import (
    build_prompt,
    build_prompts,
    check_columns,
    list_datasets,
    list_system_prompts,
    load_dataset,
)
from .errors import (
    DuplicateNameError,
    GrpoError,
    MissingColumnError,
    PluginError,
    PluginWarning,
    RewardParamError,
    SpecError,
    UnknownNameError,
)
from .hookspecs import hookimpl
from .rewards import Reward, RewardSpec, compose_rewards, get_reward, list_rewards, parse_spec
from .text import completion_text, text_reward

__all__ = [
    "__version__",
    "hookimpl",
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


def __getattr__(name: str):
    """``list_environments`` and ``get_environment``, imported when first used (the
    environments module costs a listing command's start-up otherwise)."""
    if name in ("list_environments", "get_environment"):
        from . import environments

        return getattr(environments, name)
    raise AttributeError(f"module 'grpo_core' has no attribute {name!r}")
