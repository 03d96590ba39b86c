"""Where grpo keeps what it caches (converted models, GRPOConfig's field kinds)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(kind: str = "models") -> Path:
    """``$GRPO_CACHE_DIR/<kind>``, else ``$XDG_CACHE_HOME/grpo/<kind>``, else ``~/.cache/grpo/<kind>``."""
    root = os.environ.get("GRPO_CACHE_DIR")
    if root:
        return Path(root).expanduser() / kind
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "grpo" / kind


__all__ = ["cache_dir"]
