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

Each guard is one :class:`~grpo_core.rewards.guard.GuardedReward` (the steps of a call, in
order, are listed there) with one policy piece beside it, by composition: :class:`Training`
(stop or drop), :class:`Scoring` (the server: why each item scored None) or :class:`Check`
(``grpo check``: the failed share judged, nothing stopped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grpo_core.rewards.guard import (
    STALL_ACTIONS,
    AsyncGuardedReward,
    GuardedReward,
    RewardFailure,
    RewardStalled,
    Stalls,
    Training,
    _Bad,
)
from grpo_core.rewards.reward import AsyncReward


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


class Scoring:
    """The policy outside training (the reward server): no run to stop, so the failed share is
    not judged and a reward that keeps timing out is neither stopped on nor dropped. ``why``
    keeps, per item scored, why it scored None (``timeout``, the exception's kind, ``bad
    value``), or None where it scored (or the reward itself said None)."""

    outcome = Training.outcome
    dropped = False

    def __init__(self, max_share: float = 1.0):
        self.max_share = max_share
        self.why: list[str | None] = []

    def scored(self, s, value) -> None:
        self.why.append(_why(s, value))

    def judge(self, guard: GuardedReward, failed: int, n: int) -> bool:
        return False


class Check:
    """How ``grpo check`` judges a reward: as training would, without stopping. ``failed`` of
    ``items`` (time-outs apart) is what the check judges against ``max_share``
    (``health.max_reward_errors``); a call past the time limit marks the reward ``timed_out``:
    the check calls it no more, and training counts it as the first of its time-outs in a row.
    ``why`` as :class:`Scoring`'s."""

    outcome = ("in grpo check those items score None and are not judged; in training they score None (left "
               "out by TRL), counted in rewards/{name}/errors")
    dropped = False

    def __init__(self, reward, max_share: float = 0.2):
        self.reward = reward
        self.max_share = max_share
        self.why: list[str | None] = []
        self.failed = 0  # items that raised or scored no number (time-outs apart)
        self.items = 0

    @property
    def timed_out(self) -> bool:
        return bool(getattr(self.reward, "timed_out", False))

    @property
    def ok(self) -> bool:
        """Training would go on: the failed share is within ``max_share``."""
        return self.failed <= self.max_share * self.items

    def scored(self, s, value) -> None:
        self.why.append(_why(s, value))

    def judge(self, guard: GuardedReward, failed: int, n: int) -> bool:
        if guard.timeouts and hasattr(self.reward, "timed_out"):
            self.reward.timed_out = True
        self.failed += failed - guard.timeouts
        self.items += n
        return False


def _why(s, value) -> str | None:
    """Why an item scored None: its failure, ``bad value``, or None (it scored, or the reward said None)."""
    return s.why if isinstance(s, _Bad) else (None if value is not None or s is None else "bad value")


def ScoringGuard(reward, *, source: str = "", log: Callable[[str], None] = print, max_share: float = 1.0,
                 seen: set | None = None) -> GuardedReward:
    """A guard with the :class:`Scoring` policy (the reward server)."""
    cls = AsyncGuardedReward if isinstance(reward, AsyncReward) else GuardedReward
    return cls(reward, source=source, log=log, seen=seen, policy=Scoring(max_share))


def CheckGuard(reward, *, source: str = "", log: Callable[[str], None] = print,
               max_share: float = 0.2) -> GuardedReward:
    """A guard with the :class:`Check` policy (``grpo check``): a reward that raises on some
    items costs those items in the check as in training (they score None and are not judged)."""
    cls = AsyncGuardedReward if isinstance(reward, AsyncReward) else GuardedReward
    return cls(reward, source=source, log=log, policy=Check(reward, max_share))


AsyncScoringGuard, AsyncCheckGuard = ScoringGuard, CheckGuard  # each picks the async guard for an async reward


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
           "AsyncScoringGuard", "PolicySettings", "RewardFailure", "RewardStalled", "Stalls", "STALL_ACTIONS",
           "Training", "Scoring", "Check", "guard_rewards"]
