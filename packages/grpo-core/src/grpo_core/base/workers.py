"""How many worker processes a plugin's pool runs (the math checkers, the code
sandboxes): one place for the rule both follow."""

from __future__ import annotations

import os


def default_workers(env_var: str, what: str, most: int) -> int:
    """``$env_var`` when set, else the usable CPUs divided by ``LOCAL_WORLD_SIZE``
    (processes per host under torchrun/accelerate), at least 1 and at most ``most``."""
    env = os.environ.get(env_var, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{env_var}={env!r} must be a positive integer ({what}).")
        return n
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        per_host = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        per_host = 1
    return max(1, min(most, cpus // per_host))


def check_workers(workers, what: str) -> int | None:
    """``workers`` as given: None (the default) or a positive whole number."""
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers={workers!r}: give a positive number of {what}, or None for the default.")
    return workers


__all__ = ["default_workers", "check_workers"]
