"""grpo_rewards_format: grpo plugin (hooks registered in this module)."""

from __future__ import annotations

__version__ = "0.1.0"
