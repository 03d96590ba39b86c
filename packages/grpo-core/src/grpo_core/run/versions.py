"""The TRL and transformers versions grpo is tested with, and the start-up check that refuses
others: ``grpo_core.trainer.trainer`` relies on their internals (its ``PRIVATE`` names).
``scripts/trl_range.sh`` measures each version (docs/trl-versions.md has the table), and
packages/grpo-core/pyproject.toml declares the same bounds (a test holds the three together).
``grpo train`` and the commands that prepare a run call :func:`check_versions`; ``grpo doctor``
reports :func:`version_problem` for each."""

from __future__ import annotations

from grpo_core.base.errors import ConfigError

# the TRL and transformers versions grpo is tested with, [low, high): grpo_core.trainer.trainer
# relies on their internals (its PRIVATE names); the packaging bounds them the same way, and
# docs/trl-versions.md has the table scripts/trl_range.sh measured them with
TESTED = {"trl": ("1.14.2", "1.17"), "transformers": ("5.3", "6")}  # transformers 5.2 lacks two (the table)
# minor versions inside a range that failed it, each with why: refused all the same (!=X.Y.*)
BROKEN = {"trl": {"1.15": "TRL 1.15's own GRPOTrainer fails on torch's CPU build (its fused log-probabilities "
                           "need Triton)"}}



def check_versions() -> None:
    """A clear error at start-up when the installed TRL or transformers is outside the
    versions tested (the private names grpo_core.trainer.trainer uses may have moved)."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in TESTED:
        try:
            found = version(dist)
        except PackageNotFoundError:
            raise ConfigError(f"{dist} is not installed: pip install '{requirement(dist)}'.") from None
        problem = version_problem(dist, found)
        if problem:
            raise ConfigError(problem)


def requirement(dist: str) -> str:
    """The requirement the versions tested make: ``trl>=1.14.2,!=1.15.*,<1.17``."""
    low, high = TESTED[dist]
    return f"{dist}>={low}," + "".join(f"!={minor}.*," for minor in BROKEN.get(dist, {})) + f"<{high}"


def version_problem(dist: str, found: str) -> str | None:
    """Why grpo refuses ``dist`` at version ``found`` (None: it is one of the versions tested)."""
    low, high = TESTED[dist]
    broken = BROKEN.get(dist, {}).get(".".join(found.split(".")[:2]))
    if _within(found, low, high) and broken is None:
        return None
    why = f" ({broken})" if broken else ""
    return (f"{dist} {found} is installed; grpo is tested with {requirement(dist)}{why} and relies on its "
            f"internals: pip install '{requirement(dist)}'.")


def _within(found: str, low: str, high: str) -> bool:
    def key(v: str) -> tuple:
        return tuple(int("".join(ch for ch in part if ch.isdigit()) or 0) for part in v.split(".")[:3])

    return key(low) <= key(found) < key(high)


__all__ = ["TESTED", "BROKEN", "check_versions", "requirement", "version_problem"]
