"""What training does when a reward misbehaves: one bad item never kills a run.

``guard_rewards`` wraps each composed reward for ``grpo train`` (the rewards
themselves, and ``grpo rewards check``, still raise as written):

- an exception on the batch is retried item by item; the items that raise score
  ``None`` (TRL leaves them out), the others keep their scores;
- a call past the reward's time limit (:mod:`.timelimit`) scores its items
  ``None``, counted in ``rewards/<name>/timeouts`` and reported once; timeouts
  count toward ``max_share`` like any failure, so a reward that always hangs
  stops the run with a checkpoint. ``rewards/<name>/seconds`` is its wall time;
- a wrong number of scores, a score that is not a number (``"1.0"``, ``["high"]``)
  and NaN/inf are the same kind of failure: ``None`` for the items concerned;
- failures are counted in the metric ``rewards/<name>/errors`` (per batch), and
  the first of each kind is logged once per run, with its traceback (a kind
  ``grpo check`` named before training is not named again);
- the run stops with :class:`RewardFailure`, naming the reward, its plugin and
  distribution, only when failures pass ``max_share`` of the items over the
  last ``window`` batches;
- a reward whose calls time out :attr:`Stalls.max_in_a_row` times in a row (3;
  a time-out in ``grpo check`` before training counts as the first) is not waited
  on again: ``stop`` (the default) ends the run with :class:`RewardStalled`, a
  checkpoint of the last completed step and one message naming the reward and the
  settings to change; ``drop`` goes on without it, said loudly once, its items
  scoring ``None`` uncalled (``rewards/<name>/dropped`` is 1 from then on). A dead
  reward server would otherwise cost its time limit on every step of the run.

``grpo check`` calls the rewards through the same guard (:class:`CheckGuard`,
:meth:`PolicySettings.guard_check`): an item that fails scores None and is not
judged, and the check fails a reward whose failed share passes ``max_share``, as
training would stop on it. The reward server keeps the guard per request
(:class:`ScoringGuard`: nothing to stop, why each item scored None kept).
"""

from __future__ import annotations

import math
import numbers
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from grpo_core.base.errors import GrpoError
from grpo_core.base.timelimit import RewardTimeout, call_within, report_once
from grpo_core.rewards import groups
from grpo_core.rewards.reward import AsyncReward, Reward


class RewardFailure(GrpoError):
    """A reward failed on too many items to go on."""


class RewardStalled(RewardFailure):
    """A reward timed out on too many calls in a row to keep waiting on it."""


STALL_ACTIONS = ("stop", "drop")


@dataclass(frozen=True)
class Stalls:
    """What training does with a reward whose calls keep timing out
    (``health.max_reward_timeouts``, ``health.on_reward_timeout``)."""

    max_in_a_row: int = 3  # consecutive timed-out calls of one reward
    action: str = "stop"  # stop: end the run with a checkpoint; drop: go on without the reward


@dataclass(frozen=True)
class PolicySettings:
    """The failure policy's settings together (the ``health`` section's reward keys):
    what :func:`guard_rewards` and :func:`guard_added` take, as one value."""

    window: int = 5  # batches the failure share is measured over (health.window)
    max_share: float = 0.2  # failed share of items before the run stops (health.max_reward_errors)
    stalls: Stalls = Stalls()  # time-outs in a row (health.max_reward_timeouts, health.on_reward_timeout)
    time_limit: float | None = None  # rewards TRL adds (an environment's get_reward); ours carry their own

    @classmethod
    def of(cls, health) -> PolicySettings:
        """The settings of a config's ``health`` section (``config.schema.HealthSection``)."""
        return cls(health.window, health.max_reward_errors,
                   Stalls(health.max_reward_timeouts, health.on_reward_timeout), health.reward_time_limit)

    def guard_check(self, funcs: list, log: Callable[[str], None] = print) -> list:
        """The composed rewards, each wrapped as ``grpo check`` calls them (:class:`CheckGuard`)."""
        return [(AsyncCheckGuard if isinstance(f, AsyncReward) else CheckGuard)(
            f, source=getattr(f, "source", ""), max_share=self.max_share, log=log) for f in funcs]

    def guard(self, funcs: list, log: Callable[[str], None] = print) -> list:
        """The composed rewards, each wrapped (:func:`guard_rewards`)."""
        return guard_rewards(funcs, window=self.window, max_share=self.max_share, log=log, stalls=self.stalls)

    def guard_added(self, funcs: list, names: list[str], own: int, log: Callable[[str], None] = print) -> None:
        """The rewards TRL added after the ``own`` first ones, wrapped in place (:func:`guard_added`)."""
        guard_added(funcs, names, own, self.time_limit, window=self.window, max_share=self.max_share, log=log,
                    stalls=self.stalls)


class GuardedReward:
    """A TRL reward function around a :class:`Reward`; see the module docstring.
    ``seen``: the kinds of failure already named (default: the reward's own record, so
    a kind is named once per run, in ``grpo check`` or in training)."""

    guarded = True  # scoring.call_reward: the guard keeps the time limit, no second one around it
    # what the items that fail become, in the one message per kind
    outcome = "those items score None (left out by TRL), counted in rewards/{name}/errors"

    def __init__(self, reward: Reward, *, source: str = "", window: int = 5, max_share: float = 0.2,
                 log: Callable[[str], None] = print, stalls: Stalls = Stalls(), seen: set | None = None):
        self.reward = reward
        self.__name__ = self.__qualname__ = reward.__name__
        self.required_columns = getattr(reward, "required_columns", ())
        self.source = source
        self.max_share = max_share
        self.log = log
        self.history: deque = deque(maxlen=max(int(window), 1))  # (failed, items) per batch
        self.errors = 0
        self.timeouts = 0  # items of the current batch that timed out
        self.stalls = stalls
        # calls in a row that timed out; one in grpo check before training counts
        self.in_a_row = 1 if getattr(reward, "timed_out", False) else 0
        self.dropped = False  # on_reward_timeout: drop, after max_in_a_row time-outs
        self._seen_kinds: set[str] = _named_kinds(reward) if seen is None else seen

    # ------------------------------------------------------------ the call

    def __call__(self, completions=None, **kwargs):
        n = len(completions or ())
        if self.dropped:
            return self._uncalled(n, kwargs)
        started = time.perf_counter()
        self.timeouts = 0
        try:
            scores = self._within(completions, kwargs)
        except RewardTimeout as exc:
            scores = self._timed_out(exc, n)
        except Exception as exc:  # noqa: BLE001 - a reward's bug must not kill the run
            self._note(exc)
            scores = self._items(completions, kwargs, n)
        return self._finish(scores, n, kwargs, time.perf_counter() - started)

    @property
    def time_limit(self) -> float | None:
        return getattr(self.reward, "time_limit", None)

    def _within(self, completions, kwargs):
        return call_within(self.time_limit, lambda: self.reward(completions=completions, **kwargs),
                           f"reward '{self.__name__}'")

    def _timed_out(self, exc: RewardTimeout, n: int) -> list:
        self.timeouts += n
        report_once(self.__name__, self.source, exc, self.log)
        return [_Bad("timeout")] * n

    def _items(self, completions, kwargs, n: int) -> list:
        """Each item alone after the batch raised (a group reward: each group alone); once
        one times out, the rest score None unscored (one time limit per batch, not one per item)."""
        try:
            parts = self._parts(completions, kwargs, n)
        except ValueError as exc:  # a group reward's batch that is not whole groups: no group to score
            return [_Bad(self._note(exc))] * n
        out: list = []
        for part, keywords, one in parts:
            size = len(part)
            if self.timeouts:
                out.extend([_Bad("timeout")] * size)
                self.timeouts += size
                continue
            try:
                values = self._within(part, keywords)
                out.extend([self._single(values)] if one else self._group(values, size))
            except RewardTimeout as exc:
                out.extend(self._timed_out(exc, size))
            except Exception as exc:  # noqa: BLE001
                out.extend([_Bad(self._note(exc))] * size)
        return out

    def _parts(self, completions, kwargs, n: int) -> list[tuple[list, dict, bool]]:
        """(completions, keywords, one item?) to call alone: the items, or a group reward's groups."""
        if not getattr(self.reward, "group", False):
            return [([completions[i]], {k: [v[i]] if isinstance(v, list) and len(v) == n else v
                                         for k, v in kwargs.items()}, True) for i in range(n)]
        parts, start = [], 0
        for size in groups.sizes(self.__name__, n, kwargs):
            keywords = dict(groups.cut(kwargs, n, start, start + size), group_size=size)
            parts.append((list(completions[start:start + size]), keywords, False))
            start += size
        return parts

    def _group(self, values, size: int) -> list:
        if isinstance(values, (list, tuple)) and len(values) == size:
            return list(values)
        self._kind(f"returned {values!r:.60} for a group of {size}", "wrong length")
        return [_Bad("wrong length")] * size

    # ------------------------------------------------------------ checking the scores

    def _finish(self, scores, n: int, kwargs: dict, seconds: float = 0.0) -> list:
        if not isinstance(scores, (list, tuple)) or len(scores) != n:
            got = f"{len(scores)} scores" if isinstance(scores, (list, tuple)) else f"{type(scores).__name__} {scores!r:.80}"
            self._kind(f"returned {got} for {n} completions", "wrong length")
            scores = [_Bad("wrong length")] * n
        out, failed = [], 0
        for s in scores:
            value = self._value(s)
            if value is _FAILED:
                failed += 1
                value = None
            out.append(value)
        self.errors += failed
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            log_metric(f"rewards/{self.__name__}/errors", float(failed - self.timeouts))
            log_metric(f"rewards/{self.__name__}/timeouts", float(self.timeouts))
            log_metric(f"rewards/{self.__name__}/seconds", seconds)
        if self._stalled(n):
            return [None] * n
        self._check_share(failed, n)
        return out

    # ------------------------------------------------------------ a reward that keeps timing out

    def _stalled(self, n: int) -> bool:
        """Counts calls that timed out in a row; at the limit, stops the run or drops the
        reward (True: it was dropped now)."""
        if n == 0:
            return False
        self.in_a_row = self.in_a_row + 1 if self.timeouts else 0
        if self.in_a_row < self.stalls.max_in_a_row:
            return False
        limit = f"{self.time_limit:g}s" if self.time_limit else "its time limit"
        what = (f"reward '{self.__name__}'{f' ({self.source})' if self.source else ''} timed out on "
                f"{self.in_a_row} calls in a row ({limit} each; health.max_reward_timeouts "
                f"{self.stalls.max_in_a_row})")
        if self.stalls.action == "stop":
            raise RewardStalled(
                f"{what}: stopping rather than wait on it every step. Fix the reward (or the service it "
                f"calls), raise its limit (time_limit: in its rewards entry, or health.reward_time_limit), "
                f"or train on without it: health.on_reward_timeout: drop.")
        self.dropped = True
        self.log(f"warning: {'!' * 3} {what}: DROPPED from training from now on (health.on_reward_timeout: "
                 f"drop): it is not called again, its items score None and the total is the other rewards' "
                 f"(rewards/{self.__name__}/dropped is 1). Fix it and --resume to bring it back.")
        return True

    def _uncalled(self, n: int, kwargs: dict) -> list:
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            log_metric(f"rewards/{self.__name__}/dropped", 1.0)
        return [None] * n

    def _value(self, s):
        if s is None:
            return None
        if isinstance(s, _Bad):
            return _FAILED
        if isinstance(s, numbers.Real) and not isinstance(s, bool) or _is_scalar_array(s):
            v = float(s)
            if math.isfinite(v):
                return v
            self._kind(f"returned {v}", "non-finite")
            return _FAILED
        self._kind(f"returned {s!r:.60} ({type(s).__name__}), not a number or None", f"type {type(s).__name__}")
        return _FAILED

    def _check_share(self, failed: int, n: int) -> None:
        self.history.append((failed, n))
        total = sum(k for _, k in self.history)
        bad = sum(f for f, _ in self.history)
        if total and bad / total > self.max_share and len(self.history) == self.history.maxlen:
            raise RewardFailure(
                f"reward '{self.__name__}'{f' from {self.source}' if self.source else ''} failed on {bad} of "
                f"{total} completions over the last {len(self.history)} batches ({bad / total:.0%} > "
                f"health.max_reward_errors {self.max_share:g}); the first failures are logged above. "
                f"Fix the reward, drop it from the rewards list, or raise health.max_reward_errors."
            )

    # ------------------------------------------------------------ logging once per kind

    def _single(self, out):
        if isinstance(out, (list, tuple)) and len(out) == 1:
            return out[0]
        self._kind(f"returned {out!r:.60} for one completion", "wrong length")
        return _Bad("wrong length")

    def _note(self, exc: BaseException) -> str:
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        kind = f"{type(exc).__name__} at {where.filename}:{where.lineno}" if where else type(exc).__name__
        self._kind(f"raised {type(exc).__name__}: {exc}", kind, exc)
        return kind

    def _kind(self, what: str, kind: str, exc: BaseException | None = None) -> None:
        if kind in self._seen_kinds:
            return
        self._seen_kinds.add(kind)
        detail = "".join(traceback.format_exception(exc)).rstrip() if exc is not None else ""
        self.log(f"warning: reward '{self.__name__}'{f' ({self.source})' if self.source else ''} {what}; "
                 f"{self.outcome.format(name=self.__name__)}. Shown once per kind." + (f"\n{detail}" if detail else ""))


class AsyncGuardedReward(GuardedReward):
    """The same policy around an ``async def`` reward."""

    async def __call__(self, completions=None, **kwargs):
        """Limited by ``asyncio.wait_for``: a coroutine that awaits is cancelled at its
        limit; one that blocks its event loop cannot be."""
        import asyncio

        n = len(completions or ())
        if self.dropped:
            return self._uncalled(n, kwargs)
        started = time.perf_counter()
        self.timeouts = 0
        try:
            scores = await asyncio.wait_for(self.reward(completions=completions, **kwargs), self.time_limit or None)
        except asyncio.TimeoutError:
            scores = self._timed_out(RewardTimeout(self.time_limit or 0.0), n)
        except Exception as exc:  # noqa: BLE001
            self._note(exc)
            scores = [await self._one_async(completions, kwargs, i, n) for i in range(n)]
        return self._finish(scores, n, kwargs, time.perf_counter() - started)

    async def _one_async(self, completions, kwargs, i: int, n: int):
        item = {k: [v[i]] if isinstance(v, list) and len(v) == n else v for k, v in kwargs.items()}
        try:
            out = await self.reward(completions=[completions[i]], **item)
            return self._single(out)
        except Exception as exc:  # noqa: BLE001
            return _Bad(self._note(exc))


class ScoringGuard(GuardedReward):
    """The policy outside training (the reward server, ``grpo check``): the same call,
    retries, time limit and checks of the values, but no run to stop: the failed share
    is not judged and a reward that keeps timing out is neither stopped on nor dropped.
    ``why`` keeps, per item scored, why it scored None (``timeout``, the exception's kind,
    ``bad value``), or None where it scored (or the reward itself said None)."""

    def __init__(self, reward, *, source: str = "", log: Callable[[str], None] = print, max_share: float = 1.0,
                 seen: set | None = None):
        super().__init__(reward, source=source, max_share=max_share, log=log, seen=seen)
        self.why: list[str | None] = []

    def _stalled(self, n: int) -> bool:
        return False

    def _check_share(self, failed: int, n: int) -> None:
        return None

    def _value(self, s):
        value = super()._value(s)
        self.why.append(s.why if isinstance(s, _Bad) else (None if value is not None or s is None else "bad value"))
        return value


class AsyncScoringGuard(ScoringGuard, AsyncGuardedReward):
    """The same around an ``async def`` reward."""


class CheckGuard(ScoringGuard):
    """How ``grpo check`` calls a reward: training's policy, so a reward that raises on
    some items costs those items in the check as in training (they score None and are not
    judged). ``failed`` of ``items`` (time-outs apart) is what the check judges against
    ``max_share`` (``health.max_reward_errors``). A call past the time limit marks the
    reward ``timed_out``: the check calls it no more, and training counts it as the first
    of its time-outs in a row."""

    outcome = ("in grpo check those items score None and are not judged; in training they score None (left "
               "out by TRL), counted in rewards/{name}/errors")

    def __init__(self, reward, *, source: str = "", log: Callable[[str], None] = print, max_share: float = 0.2):
        super().__init__(reward, source=source, log=log, max_share=max_share)
        self.failed = 0  # items that raised or scored no number (time-outs apart)
        self.items = 0

    @property
    def timed_out(self) -> bool:
        return bool(getattr(self.reward, "timed_out", False))

    @property
    def ok(self) -> bool:
        """Training would go on: the failed share is within ``max_share``."""
        return self.failed <= self.max_share * self.items

    def _stalled(self, n: int) -> bool:
        if self.timeouts and hasattr(self.reward, "timed_out"):
            self.reward.timed_out = True
        return False

    def _check_share(self, failed: int, n: int) -> None:
        self.failed += failed - self.timeouts
        self.items += n


class AsyncCheckGuard(CheckGuard, AsyncScoringGuard):
    """The same around an ``async def`` reward."""


def _named_kinds(reward) -> set[str]:
    """The kinds of failure named for ``reward`` so far, kept on it (one record for the
    check and training: each kind is named once per run)."""
    seen = getattr(reward, "named_failures", None)
    if not isinstance(seen, set):
        seen = set()
        try:
            reward.named_failures = seen
        except AttributeError:  # an object that takes no attributes: named once per guard
            pass
    return seen


class _Bad:
    """A failed item, with why."""

    def __init__(self, why: str):
        self.why = why


_FAILED = object()


def _is_scalar_array(s) -> bool:
    """A numpy / torch scalar (``np.float32(1.0)``, a 0-d tensor)."""
    return getattr(s, "shape", None) == () and hasattr(s, "item") and isinstance(s.item(), numbers.Real)


def guard_rewards(funcs: list, *, window: int = 5, max_share: float = 0.2,
                  log: Callable[[str], None] = print, stalls: Stalls = Stalls()) -> list:
    """Each reward wrapped with the failure policy, named after it as before."""
    return [(AsyncGuardedReward if isinstance(f, AsyncReward) else GuardedReward)(
        f, source=getattr(f, "source", ""), window=window, max_share=max_share, log=log, stalls=stalls)
        for f in funcs]


def guard_added(funcs: list, names: list[str], own: int, time_limit: float | None = None, **guard) -> None:
    """Rewards TRL added after ours (an environment's ``get_reward``) get the same
    policy and time limit: an item it fails on scores None, counted and logged once."""
    import inspect

    for i in range(own, len(funcs)):
        cls = AsyncGuardedReward if inspect.iscoroutinefunction(funcs[i]) else GuardedReward
        funcs[i] = cls(_Named(funcs[i], names[i], time_limit), **guard)


class _Named:
    """A callable under another ``__name__`` (what GuardedReward reports it as)."""

    def __init__(self, func, name: str, time_limit: float | None = None):
        self.func, self.__name__, self.time_limit = func, name, time_limit

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


__all__ = ["guard_added", "GuardedReward", "AsyncGuardedReward", "CheckGuard", "AsyncCheckGuard", "ScoringGuard",
           "AsyncScoringGuard", "PolicySettings", "RewardFailure", "RewardStalled", "Stalls", "guard_rewards"]
