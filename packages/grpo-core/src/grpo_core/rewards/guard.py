"""One reward under the failure policy: :class:`GuardedReward` calls it through each step
(time limit, retries item by item, values checked, figures logged) and hands each batch to
its policy; :class:`Training` is training's (stop or drop). The policy's other uses
(``grpo check``, the reward server) and its settings: :mod:`grpo_core.rewards.policy`."""

from __future__ import annotations

import math
import numbers
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from grpo_core.base.errors import GrpoError
from grpo_core.base.timelimit import RewardTimeout, call_within, report_once
from grpo_core.rewards import groups
from grpo_core.rewards.reward import Reward


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


class Policy(Protocol):
    """What a batch's failures cost, after its values are checked (:class:`Training`,
    :class:`~grpo_core.rewards.policy.Scoring`, :class:`~grpo_core.rewards.policy.Check`)."""

    outcome: str  # what the items that fail become, in the one message per kind
    dropped: bool  # the reward is not called any more

    def scored(self, s, value) -> None: ...

    def judge(self, guard: GuardedReward, failed: int, n: int) -> bool: ...


class GuardedReward:
    """A TRL reward function around a :class:`Reward`; see the module docstring.

    A call goes through these steps, in this order, each one small piece:

    1. a reward the policy dropped (``health.on_reward_timeout: drop``) is not called;
    2. the call within the reward's time limit (:func:`~grpo_core.base.timelimit.call_within`);
    3. a batch that raised is retried item by item (a group reward: group by group, :meth:`_items`);
    4. each value checked: a number, finite, one per completion (:meth:`_value`);
    5. ``rewards/<name>/errors``, ``/timeouts`` and ``/seconds`` logged;
    6. the ``policy`` judges the batch: :class:`Training` stops or drops the reward, :class:`Scoring`
       keeps why each item scored None, :class:`Check` counts the failed share for ``grpo check``.

    What the policy keeps (``history``, ``why``, ``failed``, ``ok``, ...) reads through the guard.
    ``seen``: the kinds of failure already named (default: the reward's own record, so a kind
    is named once per run, in ``grpo check`` or in training)."""

    guarded = True  # scoring.call_reward: the guard keeps the time limit, no second one around it

    def __init__(self, reward: Reward | Callable[..., Any], *, source: str = "", window: int = 5, max_share: float = 0.2,
                 log: Callable[[str], None] = print, stalls: Stalls = Stalls(), seen: set | None = None,
                 policy: Policy | None = None):
        self.reward = reward
        self.__name__ = self.__qualname__ = reward.__name__
        self.required_columns = getattr(reward, "required_columns", ())
        self.source = source
        self.log = log
        self.errors = 0
        self.timeouts = 0  # items of the current batch that timed out
        self.policy = policy if policy is not None else Training(reward, window, max_share, stalls)
        self._seen_kinds: set[str] = _named_kinds(reward) if seen is None else seen

    def __getattr__(self, name: str):
        policy = self.__dict__.get("policy")
        if policy is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(policy, name)

    # ------------------------------------------------------------ the call

    def __call__(self, completions=None, **kwargs):
        n = len(completions or ())
        if self.policy.dropped:
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
            self.policy.scored(s, value)
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
        return [None] * n if self.policy.judge(self, failed, n) else out

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
                 f"{self.policy.outcome.format(name=self.__name__)}. Shown once per kind."
                 + (f"\n{detail}" if detail else ""))


class AsyncGuardedReward(GuardedReward):
    """The same steps around an ``async def`` reward."""

    async def __call__(self, completions=None, **kwargs):
        """Limited by ``asyncio.wait_for``: a coroutine that awaits is cancelled at its
        limit; one that blocks its event loop cannot be."""
        import asyncio

        n = len(completions or ())
        if self.policy.dropped:
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


class Training:
    """Training's policy: failures past ``max_share`` of the items over the last ``window``
    batches stop the run (:class:`RewardFailure`); ``stalls.max_in_a_row`` timed-out calls in a
    row stop it (:class:`RewardStalled`) or drop the reward."""

    outcome = "those items score None (left out by TRL), counted in rewards/{name}/errors"

    def __init__(self, reward, window: int = 5, max_share: float = 0.2, stalls: Stalls = Stalls()):
        self.max_share = max_share
        self.stalls = stalls
        self.history: deque = deque(maxlen=max(int(window), 1))  # (failed, items) per batch
        # calls in a row that timed out; one in grpo check before training counts
        self.in_a_row = 1 if getattr(reward, "timed_out", False) else 0
        self.dropped = False  # on_reward_timeout: drop, after max_in_a_row time-outs

    def scored(self, s, value) -> None:
        return None

    def judge(self, guard: GuardedReward, failed: int, n: int) -> bool:
        """True when the reward is dropped now (its items score None); raises to stop the run."""
        if self._stalled(guard, n):
            return True
        self._check_share(guard, failed, n)
        return False

    def _stalled(self, guard: GuardedReward, n: int) -> bool:
        if n == 0:
            return False
        self.in_a_row = self.in_a_row + 1 if guard.timeouts else 0
        if self.in_a_row < self.stalls.max_in_a_row:
            return False
        name, source = guard.__name__, guard.source
        limit = f"{guard.time_limit:g}s" if guard.time_limit else "its time limit"
        what = (f"reward '{name}'{f' ({source})' if source else ''} timed out on {self.in_a_row} calls in a row "
                f"({limit} each; health.max_reward_timeouts {self.stalls.max_in_a_row})")
        if self.stalls.action == "stop":
            raise RewardStalled(
                f"{what}: stopping rather than wait on it every step. Fix the reward (or the service it "
                f"calls), raise its limit (time_limit: in its rewards entry, or health.reward_time_limit), "
                f"or train on without it: health.on_reward_timeout: drop.")
        self.dropped = True
        guard.log(f"warning: {'!' * 3} {what}: DROPPED from training from now on (health.on_reward_timeout: "
                  f"drop): it is not called again, its items score None and the total is the other rewards' "
                  f"(rewards/{name}/dropped is 1). Fix it and --resume to bring it back.")
        return True

    def _check_share(self, guard: GuardedReward, failed: int, n: int) -> None:
        self.history.append((failed, n))
        total = sum(k for _, k in self.history)
        bad = sum(f for f, _ in self.history)
        if total and bad / total > self.max_share and len(self.history) == self.history.maxlen:
            raise RewardFailure(
                f"reward '{guard.__name__}'{f' from {guard.source}' if guard.source else ''} failed on {bad} of "
                f"{total} completions over the last {len(self.history)} batches ({bad / total:.0%} > "
                f"health.max_reward_errors {self.max_share:g}); the first failures are logged above. "
                f"Fix the reward, drop it from the rewards list, or raise health.max_reward_errors."
            )


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


__all__ = ["GuardedReward", "AsyncGuardedReward", "Policy", "Training", "RewardFailure", "RewardStalled", "Stalls",
           "STALL_ACTIONS"]
