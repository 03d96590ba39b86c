"""Environments for tool-using, multi-turn rollouts (TRL's ``environment_factory``).

- ``python``: a Python interpreter the model calls as a tool, for tool-integrated
  math reasoning: it writes a program, sees what it printed, then answers (scored
  by ``math.correctness`` or any other reward). The program runs in the code
  sandbox (:mod:`grpo_rewards_code.sandbox`), never in the trainer.
- ``guess_number``: find a secret whole number with ``guess(number)``, told
  ``higher`` or ``lower`` after each guess; a game of several turns that scores
  itself (``get_reward``: 1.0 when found within ``max_guesses``). The procedural
  ``guess_number`` dataset deals the secrets.

Importing this module is cheap: the sandbox and ``datasets`` load on first use.
A tool's docstring is what the model reads about it (TRL renders it with the
chat template), so it is written for the model.
"""

from __future__ import annotations

import functools

MAX_CODE_CHARS = 64_000


def python(timeout: float = 5.0, memory_mb: int = 512, max_calls: int = 4, max_output_chars: int = 1000,
           sandbox: str = "auto"):
    """A Python interpreter tool: each call runs a program in a fresh sandbox and returns what it printed.

    The model calls ``python(code)``; the program runs with the standard library
    only (no files, network or processes of the host), and the tool returns its
    standard output, followed by the error when it raised (``ZeroDivisionError:
    division by zero``), cut at ``max_output_chars``. Each call starts a fresh
    interpreter: nothing carries over between calls. After ``max_calls`` calls in
    one rollout the tool refuses. No reward of its own: score the answer with
    ``math.correctness`` (or another reward).

    :param timeout: wall-clock seconds per call, after which the program is killed.
    :param memory_mb: address-space limit per call.
    :param max_calls: calls per rollout.
    :param max_output_chars: output the model sees per call.
    :param sandbox: ``auto``, ``bwrap``, ``unshare`` or ``rlimits`` (see the package README).
    """
    from . import sandbox as sb
    from .jobs import Limits

    limits = Limits(timeout=timeout, memory_mb=memory_mb)  # bad values fail here, before any model loads
    if max_calls < 1 or max_output_chars < 1:
        raise ValueError(f"max_calls ({max_calls}) and max_output_chars ({max_output_chars}) must be at least 1.")
    sb.backend(sb.check_choice(sandbox))  # a named backend that does not work here fails now
    return functools.partial(PythonInterpreter, limits=limits, max_calls=max_calls,
                             max_output_chars=max_output_chars, sandbox=sandbox)


class PythonInterpreter:
    """One rollout's interpreter tool. ``calls`` records (code, what the model was shown)."""

    def __init__(self, limits=None, max_calls: int = 4, max_output_chars: int = 1000, sandbox: str = "auto"):
        from .jobs import Limits

        self._limits = limits or Limits()
        self._max_calls = max_calls
        self._max_output = max_output_chars
        self._sandbox = sandbox
        self.calls: list[tuple[str, str]] = []

    def reset(self, **row) -> None:
        self.calls = []

    def python(self, code: str) -> str:
        """Run a Python program and return what it printed.

        Args:
            code: A complete Python program (standard library only). Print the values you need: only what it prints comes back.

        Returns:
            The program's output, then its error message if it raised.
        """
        shown = self._run(code)
        self.calls.append((code if isinstance(code, str) else repr(code), shown))
        return shown

    def _run(self, code) -> str:
        if len(self.calls) >= self._max_calls:
            return f"error: no calls left (at most {self._max_calls} per answer); answer now."
        if not isinstance(code, str) or not code.strip():
            return "error: give the program as a non-empty string in 'code'."
        if len(code) > MAX_CODE_CHARS:
            return f"error: the program is {len(code)} characters long; at most {MAX_CODE_CHARS}."
        from . import sandbox as sb
        from .jobs import Job

        result = sb.run([Job(code, mode="raw")], self._limits, workers=1, sandbox=self._sandbox)[0]
        if result.status == "sandbox_error":  # not the model's fault: TRL counts it in tools/failure_frequency
            raise RuntimeError(f"the sandbox did not start: {result.detail}")
        return self._shown(result)

    def _shown(self, result) -> str:
        out = result.stdout.decode("utf-8", "replace").rstrip("\n")
        error = None
        if result.status == "timeout":
            error = f"error: stopped after {self._limits.timeout:g} s (time limit)"
        elif result.status == "output_limit":
            error = "error: stopped: it printed too much"
        elif result.status == "crashed":
            error = "error: the program crashed (memory limit or a signal)"
        elif result.exit_code:
            error = _traceback(result.stderr.decode("utf-8", "replace"))
        out = "\n".join(part for part in (out, error) if part)
        if len(out) > self._max_output:
            out = out[: self._max_output] + f"\n... ({len(out) - self._max_output} more characters)"
        return out or "(no output: print what you need)"


def _traceback(stderr: str) -> str:
    """The error as the program's author would see it: the frames before the program's
    own (the sandbox's harness running it) left out."""
    lines = stderr.rstrip("\n").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Traceback")), None)
    first = next((i for i, line in enumerate(lines) if line.startswith('  File "<program>"')), None)
    if start is None or first is None:
        return "\n".join(lines)
    return "\n".join(lines[: start + 1] + lines[first:])


# --------------------------------------------------------------------------- guess the number


class GuessNumber:
    """Find the secret number: each ``guess`` is answered higher, lower or correct."""

    def __init__(self, max_guesses: int = 8):
        self._max = max_guesses
        self.secret, self.low, self.high = 0, 1, 100
        self.guesses: list[int] = []
        self.found = False

    def reset(self, secret: int, low: int = 1, high: int = 100, **row) -> None:
        self.secret, self.low, self.high = int(secret), int(low), int(high)
        self.guesses, self.found = [], False

    def guess(self, number: int) -> str:
        """Guess the secret number.

        Args:
            number: Your guess, a whole number in the range the task gives.

        Returns:
            'higher' if the secret number is higher, 'lower' if it is lower, 'correct' if you found it.
        """
        if self.found:
            return f"correct: you already found it ({self.secret}); give your final answer."
        if len(self.guesses) >= self._max:
            return f"no guesses left (at most {self._max}); the game is over."
        whole = _whole(number)
        if whole is None:
            return f"error: guess a whole number between {self.low} and {self.high}."
        self.guesses.append(whole)
        if whole == self.secret:
            self.found = True
            return "correct"
        return "higher" if whole < self.secret else "lower"

    def get_reward(self) -> float:
        """1.0 when the secret was found within the allowed guesses, else 0.0."""
        return 1.0 if self.found else 0.0


def _whole(value) -> int | None:
    """A whole number from what the model sent (50, 50.0, "50"), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and len(value) <= 40:
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, (int, float)) and value == value and abs(value) < 1e15 and value == int(value):
        return int(value)
    return None


def guess_number(max_guesses: int = 8):
    """Guess-the-number game: guess(number) answers higher, lower or correct; 1.0 when found within max_guesses.

    Needs the dataset columns ``secret`` (and optionally ``low``, ``high``; default
    1 and 100), as the ``guess_number`` dataset deals them. Binary search finds
    any number in 1..100 within 7 guesses. ``get_reward`` is the environment's own
    reward, logged as ``rewards/guess_number/mean``.

    :param max_guesses: guesses per game; later ones are refused.
    """
    if isinstance(max_guesses, bool) or not isinstance(max_guesses, int) or max_guesses < 1:
        raise ValueError(f"max_guesses={max_guesses!r}: give a whole number of guesses >= 1.")
    return functools.partial(GuessNumber, max_guesses=max_guesses)


GUESS_QUESTION = ("I am thinking of a whole number between {low} and {high}. Find it: call guess(number) and I will "
                  "answer 'higher', 'lower' or 'correct'. Use as few guesses as you can.")


def load_guess_number(split: str = "train", *, size: int = 1000, low: int = 1, high: int = 100, seed: int = 0):
    """Guess-the-number games, generated: ``question``, ``secret``, ``low``, ``high``, ``answer`` (the secret).

    The same (split, seed) always deals the same secrets; ``train`` and ``test``
    deal different ones. For the ``guess_number`` environment.
    """
    import random

    from datasets import Dataset

    if size < 1 or low > high:
        raise ValueError(f"size={size}, low={low}, high={high}: need size >= 1 and low <= high.")
    rng = random.Random(f"guess_number/{split}/{seed}")
    secrets = [rng.randint(low, high) for _ in range(size)]
    return Dataset.from_dict({
        "question": [GUESS_QUESTION.format(low=low, high=high)] * size,
        "secret": secrets,
        "low": [low] * size,
        "high": [high] * size,
        "answer": [str(s) for s in secrets],
    })


ENVIRONMENTS = {"python": python, "guess_number": guess_number}

__all__ = ["python", "PythonInterpreter", "guess_number", "GuessNumber", "load_guess_number", "ENVIRONMENTS"]
