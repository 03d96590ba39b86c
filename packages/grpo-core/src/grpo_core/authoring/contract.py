"""The reward contract suite: what every reward, ours or a third party's, must do.

- returns a list (or tuple) with one value per completion;
- each value is a finite float/int or ``None``;
- survives hostile text (empty, huge, unicode, injection attempts, tag floods)
  and both completion shapes (str and conversational messages);
- is deterministic for the same input, picklable, and callable from a thread;
- is ``async def`` (awaited here, as TRL awaits it) exactly when it returns a
  coroutine: TRL never awaits a coroutine from a function that looks synchronous.

Use it from the command line (``grpo rewards check NAME``) or in a plugin's own
tests with one line::

    from grpo_core.authoring.contract import RewardContract

    class TestBrevity(RewardContract):
        reward = "acme.brevity"          # or a grpo_core.Reward / plain function
        plugin = grpo_acme               # optional: registered here unless already loaded
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
import pickle
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from grpo_core.base.params import split_signature
from grpo_core.plugin import plugins
from grpo_core.rewards.reward import Reward, get_reward

HOSTILE_TEXTS: tuple[str, ...] = (
    "",
    " ",
    "\x00\x01\x02",
    "42",
    "The answer is 42.",
    "<think>step</think><answer>42</answer>",
    "<think>" * 10_000,
    "</answer>" * 1_000 + "<answer>",
    "<think><think><answer></think></answer>",
    "\\boxed{" * 2_000,
    "(" * 5_000 + ")" * 10,
    "9" * 5_000,
    "1e999999",
    "2**2**2**2**2**2**2**2",
    "__import__('os').system('echo pwned')",
    "exec('import os')",
    "{{7*7}} ${7*7} `rm -rf /`",
    "日本語のテキスト 🤖🧮 ∑∫√π − ∞ ١٢٣ \u202eRTL\u202c e\u0301",
    "\ud800 lone surrogate",
    "a" * 1_000_000,
    "word " * 20_000,
    '{"answer": 42, "nested": ' * 200 + "}" * 200,
)

SYNTHETIC_COLUMN_VALUES: dict[str, Any] = {"answer": "42", "solution": "42", "lower": None, "upper": None}


@dataclass
class CheckResult:
    name: str
    ok: bool
    message: str = ""

    def __str__(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.name}" + (f": {self.message}" if self.message else "")


def _resolve(reward: Any, params: dict | None) -> Callable:
    if isinstance(reward, str):
        return get_reward(reward, **(params or {}))
    if isinstance(reward, Reward) or not params:
        return reward
    return Reward(getattr(reward, "__name__", "reward"), reward, params)


def _columns_for(func: Callable, n: int, columns: dict | None) -> dict[str, list]:
    required = getattr(func, "required_columns", None)
    if required is None:
        _, required, _ = split_signature(func)
    out = {}
    for col in required:
        value = (columns or {}).get(col, SYNTHETIC_COLUMN_VALUES.get(col, "42"))
        out[col] = [value] * n
    for col, value in (columns or {}).items():  # optional columns too (e.g. lower/upper)
        out[col] = [value] * n
    return out


def _call(func: Callable, completions: list, columns: dict | None, with_ids: bool = True) -> Any:
    n = len(completions)
    prompts = [[{"role": "user", "content": "What is 6 * 7?"}]] * n
    ids = [[1, 2, 3][: (i % 3) + 1] for i in range(n)] if with_ids else None
    kwargs = dict(
        prompts=prompts,
        completion_ids=ids,
        trainer_state=None,
        log_metric=lambda *a, **k: None,
        log_extra=lambda *a, **k: None,
    )
    kwargs.update(_columns_for(func, n, columns))
    values = func(completions, **kwargs)
    if inspect.isawaitable(values):
        if not is_async_callable(func):
            if inspect.iscoroutine(values):
                values.close()  # no "never awaited" warning on top of the real message
            raise _HiddenCoroutine(func)
        values = _wait(values)
    return values


def is_async_callable(func: Callable) -> bool:
    """Whether TRL treats ``func`` as async (and awaits it): the test of TRL's
    ``is_async_callable``, without importing TRL."""
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or (
        callable(func) and inspect.iscoroutinefunction(func.__call__))  # type: ignore[operator]  # mypy#5079: a Callable's __call__


class _HiddenCoroutine(Exception):
    def __init__(self, func: Callable):
        name = getattr(func, "__name__", repr(func))
        super().__init__(
            f"'{name}' returned a coroutine, but neither it nor its __call__ is `async def`, so "
            f"TRL would use the coroutine itself as the scores and never await it. Make the reward "
            f"itself `async def` (a plain `def` wrapper around an async function hides it).")


def _wait(awaitable: Any) -> Any:
    """The result of an async reward, from any thread, inside a running event loop too."""

    async def wait():
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    with ThreadPoolExecutor(1) as pool:  # asyncio.run refuses to nest in a running loop
        return pool.submit(asyncio.run, wait()).result()


def _values_problem(values: Any, n: int) -> str | None:
    if not isinstance(values, (list, tuple)):
        return f"returned {type(values).__name__}, expected a list"
    if len(values) != n:
        return f"returned {len(values)} values for {n} completions"
    for i, v in enumerate(values):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"value #{i} is {type(v).__name__} {v!r}, expected float or None"
        if not math.isfinite(v):
            return f"value #{i} is {v}, expected a finite float or None"
    return None


def check_reward(
    reward: Any,
    params: dict | None = None,
    columns: dict | None = None,
    max_seconds: float = 30.0,
) -> list[CheckResult]:
    """Run the contract suite on ``reward`` (a registered name, a Reward, or a function).

    ``columns`` gives values for dataset columns the reward requires (defaults:
    ``answer="42"``); ``max_seconds`` bounds the whole hostile batch.
    """
    try:
        func = _resolve(reward, params)
    except Exception as exc:
        return [CheckResult("resolves", False, f"{type(exc).__name__}: {exc}")]
    suite = _Suite(func, columns, max_seconds)
    return [suite.run(name, getattr(suite, method)) for name, method in CHECKS]


# (what the result says, the _Suite method that checks it)
CHECKS = (
    ("has a name", "named"),
    ("plain completions", "plain"),
    ("empty batch", "empty_batch"),
    ("no completion_ids", "without_ids"),
    ("conversational completions", "conversational"),
    ("hostile text", "hostile"),
    ("deterministic", "deterministic"),
    ("picklable", "picklable"),
    ("callable from a thread", "threaded"),
)


class _Suite:
    """The contract checks of one reward; each returns None or what is wrong."""

    def __init__(self, func: Callable, columns: dict | None, max_seconds: float):
        self.func, self.columns, self.max_seconds = func, columns, max_seconds
        self.texts = list(HOSTILE_TEXTS)

    def run(self, name: str, body: Callable[[], str | None]) -> CheckResult:
        try:
            problem = body()
        except _HiddenCoroutine as exc:
            problem = str(exc)
        except Exception as exc:
            problem = f"raised {type(exc).__name__}: {str(exc)[:300]}"
        return CheckResult(name, problem is None, problem or "")

    def call(self, completions: list, with_ids: bool = True, func: Callable | None = None) -> Any:
        return _call(func or self.func, completions, self.columns, with_ids=with_ids)

    def named(self):
        name = getattr(self.func, "__name__", None)
        return None if isinstance(name, str) and name else "has no __name__ (TRL logs rewards by it)"

    def plain(self):
        return _values_problem(self.call(["The answer is 42.", "I am not sure."]), 2)

    def without_ids(self):  # `grpo score` has text but no token ids
        return _values_problem(self.call(["The answer is 42.", ""], with_ids=False), 2)

    def empty_batch(self):
        return _values_problem(self.call([]), 0)

    def hostile(self):
        start = time.perf_counter()
        problem = _values_problem(self.call(self.texts), len(self.texts))
        took = time.perf_counter() - start
        if problem is None and took > self.max_seconds:
            problem = f"took {took:.1f}s for {len(self.texts)} hostile completions (limit {self.max_seconds:g}s)"
        return problem

    def conversational(self):
        messages = [[{"role": "assistant", "content": t}] for t in self.texts[:8]]
        return _values_problem(self.call(messages), len(messages))

    def deterministic(self):
        batch = self.texts[:6]
        a, b = self.call(batch), self.call(batch)
        return None if list(a) == list(b) else f"two calls on the same input gave {a} and {b}"

    def picklable(self):
        clone = pickle.loads(pickle.dumps(self.func))
        return _values_problem(self.call(["The answer is 42."], func=clone), 1)

    def threaded(self):
        box: dict = {}

        def target():
            try:
                box["v"] = self.call(["The answer is 42.", ""])
            except Exception as exc:  # reported below
                box["e"] = exc

        t = threading.Thread(target=target)
        t.start()
        t.join(self.max_seconds)
        if t.is_alive():
            return f"did not return within {self.max_seconds:g}s when called from a thread"
        if isinstance(box.get("e"), _HiddenCoroutine):
            return str(box["e"])
        if "e" in box:
            return f"raised {type(box['e']).__name__} in a thread: {box['e']}"
        return _values_problem(box["v"], 2)


def _register_plugin(plugin: Any) -> bool:
    """Register ``plugin`` in process unless it is loaded already; True if this registered it.

    An installed plugin is loaded by entry point under its entry-point name
    (``acme``), so it is looked up by module, not by name: pluggy refuses one
    module under two names.
    """

    if plugin is None:
        return False
    plugins.load_plugins()
    module = getattr(plugin, "__name__", None)
    for loaded in plugins.pm.get_plugins():
        if loaded is plugin or (module and getattr(loaded, "__name__", None) == module):
            return False
    plugins.pm.register(plugin, name=module)
    return True


class RewardContract:
    """Subclass in a test module and set ``reward`` (and optionally ``params``,
    ``columns``): pytest collects one test per contract check."""

    reward: Any = None
    params: dict | None = None
    columns: dict | None = None
    plugin: Any = None  # a plugin module: registered in process unless already loaded
    max_seconds: float = 30.0  # the hostile batch's time limit (a reward asking a server may need more)
    _cache: ClassVar[dict[str, CheckResult]]  # each subclass's own results, set on its first check (__dict__)

    def _results(self) -> dict[str, CheckResult]:
        cache = type(self).__dict__.get("_cache")
        if cache is None:
            registered = _register_plugin(self.plugin)
            try:
                cache = {r.name: r for r in check_reward(self.reward, self.params, self.columns, self.max_seconds)}
            finally:
                if registered:

                    plugins.pm.unregister(self.plugin)
            type(self)._cache = cache
        return cache

    def _assert(self, name: str) -> None:
        results = self._results()
        if "resolves" in results:
            raise AssertionError(str(results["resolves"]))
        assert results[name].ok, str(results[name])

    def test_has_a_name(self):
        self._assert("has a name")

    def test_plain_completions(self):
        self._assert("plain completions")

    def test_empty_batch(self):
        self._assert("empty batch")

    def test_no_completion_ids(self):
        self._assert("no completion_ids")

    def test_conversational_completions(self):
        self._assert("conversational completions")

    def test_hostile_text(self):
        self._assert("hostile text")

    def test_deterministic(self):
        self._assert("deterministic")

    def test_picklable(self):
        self._assert("picklable")

    def test_callable_from_a_thread(self):
        self._assert("callable from a thread")
