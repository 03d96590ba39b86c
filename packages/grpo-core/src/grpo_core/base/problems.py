"""A config's problems, gathered so that one run reports them all.

Loading a config walks independent steps (top-level fields, each section, each
reward); each step adds its problems here instead of stopping the walk, and one
error is raised at the end. A step that depends on an earlier one (a dataset's
parameters need its name) stops after its own problem.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grpo_core.base.errors import ConfigError, GrpoError


class ConfigProblems(ConfigError):
    """Two or more problems of one config, numbered, each with its fix."""

    def __init__(self, where: str, problems: list[GrpoError]):
        self.where, self.problems = where, list(problems)
        lines = [f"{len(self.problems)} problems in {where}:"]
        lines += [f"  {i}. {_indent(str(p))}" for i, p in enumerate(self.problems, 1)]
        super().__init__("\n".join(lines))


def _indent(text: str) -> str:
    return text.replace("\n", "\n     ")


class Problems:
    """The problems and notes of one config being loaded. ``strict``: settings grpo
    would translate (a field TRL removed whose intent is plain) are problems too."""

    def __init__(self, strict: bool = False):
        self.strict = strict
        self.errors: list[GrpoError] = []
        self.notes: list[str] = []
        self.failed: set[str] = set()  # what a failed step was about ("rewards"): later steps need not repeat it

    def add(self, problem: GrpoError | str) -> None:
        error = ConfigError(problem) if isinstance(problem, str) else problem
        if str(error) not in {str(e) for e in self.errors}:  # one problem found twice is one problem
            self.errors.append(error)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def attempt(self, step: Callable, *args: Any, default: Any = None, subject: str | None = None,
                **kwargs: Any) -> Any:
        """``step(*args, **kwargs)``, or ``default`` after keeping the problem it raised
        (and marking ``subject`` failed)."""
        try:
            return step(*args, **kwargs)
        except GrpoError as exc:
            self.add(exc)
            if subject:
                self.failed.add(subject)
            return default

    def __len__(self) -> int:
        return len(self.errors)

    def raise_if_any(self, where: str) -> None:
        """One problem is raised as it is (its own type and text); more as one ConfigProblems."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigProblems(where, self.errors)


__all__ = ["Problems", "ConfigProblems"]
