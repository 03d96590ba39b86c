"""``frontier``: prompts whose groups are likeliest to come back half right.

A group whose completions are all right or all wrong teaches the task nothing (its
correctness advantage is 0). ``frontier`` chooses each generation batch's prompts, before
generating, so that their expected pass rate is near ``target``, from two sources:

- the dataset's difficulty knob, where its adapter declares one (``arithmetic``'s ``level``,
  the ``rg.*`` datasets' ``levels``: :mod:`grpo_core.data.difficulty`): a current difficulty
  that the observed pass rate moves, as AdaRFT (arXiv 2504.05520) moves its target
  difficulty, ``d += step * span * tanh(2 * (observed - target))``, clipped to the rows'
  difficulties; the batch is drawn from the rows nearest it;
- for any dataset, a pass-rate estimate per prompt from the rollouts already scored, as
  MoPPS does: a Beta posterior per prompt (the counts decay by ``decay`` each time it is
  seen again), whose prior is its difficulty's pooled pass rate (or the whole run's) with
  ``prior`` pseudo-counts. Of ``candidates`` times the prompts needed, drawn at random from
  the rows nearest the difficulty, those whose posterior draw (Thompson sampling) lies
  nearest the target are taken; ``explore`` of the batch is taken at random instead.

It generates nothing of its own: the tokens it spends are the training's own. Logged per
generation batch (``prompts/...``): ``difficulty`` (the knob, where there is one),
``expected_pass`` (the chosen prompts' posterior mean), ``observed_pass`` and ``flat_share``
(groups all right or all wrong on the correctness reward).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from grpo_core.data.difficulty import Difficulty
from grpo_core.trainer.samplers.base import Pool, flat
from grpo_core.trainer.samplers.builtin import SAMPLERS


class Frontier:
    judges_correctness = True  # pass rates are read on learning.metric

    def __init__(self, target: float, knob: bool | str, step: float, explore: float, candidates: int,
                 prior: float, decay: float, start: float | None):
        self.target, self.use_knob, self.step, self.explore = target, knob, step, explore
        self.candidates, self.prior, self.decay, self.start_at = candidates, prior, decay, start
        self.pool: Pool  # set by start
        self.by_level: dict[float, list[int]] = {}  # the knob's values, each with its rows
        self.row_levels: Sequence[float] = ()  # each row's difficulty, where the knob steers
        self.level: float | None = None  # the knob's current difficulty
        self.batches = 0  # batches chosen so far (each one's random draws are seeded by it)
        self.prompts: dict[int, list[float]] = {}  # prompt key -> [passes, fails], decayed
        self.buckets: dict[str, list[float]] = {}  # difficulty (or "all") -> [passes, fails], decayed
        self.stuck = ""  # "low" / "high" while the knob is pushed past an end (said once)
        self.expected = math.nan
        self.last: dict[str, float] = {}

    # ------------------------------------------------------------------ the sampler API

    def start(self, pool: Pool) -> None:
        self.pool = pool
        self.by_level = {}
        steering = self._steering(pool)
        if steering is None:
            return
        knob, self.row_levels = steering
        for row, value in enumerate(self.row_levels):
            self.by_level.setdefault(float(value), []).append(row)
        low, high = min(self.by_level), max(self.by_level)
        if self.start_at is not None and not low <= self.start_at <= high:
            raise ValueError(f"frontier's start={self.start_at:g} lies outside the training rows' difficulties "
                             f"({knob.column} {low:g} to {high:g}); give one inside, or leave it out (the easiest).")
        if self.level is None:  # (a resumed run's was loaded)
            self.level = low if self.start_at is None else float(self.start_at)
        pool.say(f"frontier: difficulty from dataset '{pool.dataset}' column '{knob.column}' "
                 f"({low:g} to {high:g}, {len(self.by_level)} values), starting at {self.level:g}; target pass rate "
                 f"{self.target:g}, and each prompt's pass-rate estimate.")

    def choose(self, pool: Pool, n: int, proposed: Sequence[int] | None) -> list[int]:
        rng = random.Random(f"frontier:{pool.seed}:{self.batches}")
        self.batches += 1
        band = self._band(n)
        drawn = rng.sample(band, min(len(band), max(n, self.candidates * n)))
        rows = _distinct(drawn, pool.keys)
        if len(rows) < n:  # too few distinct prompts near the difficulty: the others, then repeats
            rest = [r for r in _distinct(rng.sample(range(len(pool)), len(pool)), pool.keys) if r not in rows]
            rows += rest[:n - len(rows)]
            rows += [rows[i % len(rows)] for i in range(n - len(rows))]
        explored = sum(rng.random() < self.explore for _ in range(n))
        chosen = rows[:explored]  # (rows are in a random order)
        scored = sorted(rows[explored:], key=lambda r: abs(rng.betavariate(*self.posterior(r)) - self.target))
        chosen += scored[:n - explored]
        self.expected = sum(a / (a + b) for a, b in map(self.posterior, chosen)) / len(chosen)
        return chosen

    def observe(self, rows: Sequence[int], passed: Sequence[Sequence[float]]) -> None:
        scores, flats = [], 0
        for row, group in zip(rows, passed):
            flats += flat(group)
            got = [p for p in group if math.isfinite(p)]
            if not got:
                continue
            s = sum(got)
            for counts in (self.prompts.setdefault(self.pool.keys[row], [0.0, 0.0]),
                           self.buckets.setdefault(self._bucket(row), [0.0, 0.0])):
                counts[0] = self.decay * counts[0] + s
                counts[1] = self.decay * counts[1] + len(got) - s
            scores += got
        observed = sum(scores) / len(scores) if scores else math.nan
        if self.level is not None and scores:
            self._move(self.level, observed)
        self.last = {"expected_pass": self.expected, "observed_pass": observed,
                     "flat_share": flats / len(rows) if rows else math.nan}
        if self.level is not None:
            self.last["difficulty"] = self.level

    def metrics(self) -> dict[str, float]:
        return dict(self.last)

    def state(self) -> dict:
        return {"batches": self.batches, "level": self.level, "stuck": self.stuck, "expected": _json(self.expected),
                "prompts": [[k, *v] for k, v in self.prompts.items()],
                "buckets": [[k, *v] for k, v in self.buckets.items()]}

    def load(self, state: dict) -> None:
        self.batches, self.stuck = int(state["batches"]), str(state.get("stuck", ""))
        self.level = None if state.get("level") is None else float(state["level"])
        self.expected = math.nan if state.get("expected") is None else float(state["expected"])
        self.prompts = {int(k): [float(s), float(f)] for k, s, f in state["prompts"]}
        self.buckets = {str(k): [float(s), float(f)] for k, s, f in state["buckets"]}

    # ------------------------------------------------------------------ its parts

    def posterior(self, row: int) -> tuple[float, float]:
        """The Beta(a, b) of a row's prompt: its bucket's pass rate as a prior of ``prior``
        pseudo-counts, plus its own (decayed) passes and fails."""
        bs, bf = self.buckets.get(self._bucket(row), (0.0, 0.0))
        mean = (bs + 1.0) / (bs + bf + 2.0)
        s, f = self.prompts.get(self.pool.keys[row], (0.0, 0.0))
        return self.prior * mean + s, self.prior * (1.0 - mean) + f

    def _bucket(self, row: int) -> str:
        return "all" if not self.by_level else f"{float(self.row_levels[row]):g}"

    def _band(self, n: int) -> list[int]:
        """The rows nearest the current difficulty (every row without a knob): whole
        difficulties, nearest first, until there are ``candidates`` times ``n`` rows."""
        level = self.level
        if level is None:
            return list(range(len(self.pool)))
        band: list[int] = []
        for value in sorted(self.by_level, key=lambda v: (abs(v - level), v)):
            if len(band) >= self.candidates * n:
                break
            band += self.by_level[value]
        return band

    def _move(self, level: float, observed: float) -> None:
        """AdaRFT's update of the difficulty (now ``level``); at an end it cannot pass, one warning."""
        low, high = min(self.by_level), max(self.by_level)
        push = math.tanh(2.0 * (observed - self.target))
        end = "low" if push < 0 and level <= low else "high" if push > 0 and level >= high else ""
        if end and end != self.stuck:
            self._say_stuck(end, observed, low if end == "low" else high)
        self.stuck = end
        self.level = min(high, max(low, level + self.step * (high - low) * push))

    def _say_stuck(self, end: str, observed: float, value: float) -> None:
        pool, knob = self.pool, self.pool.knob
        assert knob is not None  # (the knob moves only where start found one)
        below, which, way = ("below", "easiest", "down") if end == "low" else ("above", "hardest", "up")
        wanted = "easier" if end == "low" else "harder"
        pool.say(f"warning: frontier: the observed pass rate {observed:.2f} is {below} the target {self.target:g} at "
                 f"the {which} difficulty the training rows have ({knob.column} {value:g}): the knob cannot "
                 f"move further {way}; prompts are chosen by their pass-rate estimates there. For {wanted} prompts, "
                 f"{knob.widen(pool.dataset)}.")

    def _steering(self, pool: Pool) -> tuple[Difficulty, Sequence[float]] | None:
        """The knob and each row's difficulty when it steers; None (said why) when it does not."""
        if self.use_knob is False:
            return None
        knob, name = pool.knob, pool.dataset
        if knob is None:
            why = f"dataset '{name}' declares no difficulty"
        elif pool.difficulty is None:
            why = (f"dataset '{name}' declares its difficulty in column '{knob.column}', but its training rows have "
                   f"no such column ({knob.widen(name)})")
        elif missing := sum(1 for v in pool.difficulty if v is None or v != v):  # None or NaN
            why = (f"{missing} of {len(pool.difficulty)} training rows of dataset '{name}' have no {knob.column}; "
                   f"{knob.widen(name)}, which keeps only rows that have one")
        elif len({float(v) for v in pool.difficulty}) < 2:
            value = float(pool.difficulty[0])
            why = (f"every training row of dataset '{name}' has {knob.column} {value:g}: one difficulty, so the "
                   f"knob cannot steer; {knob.widen(name)}")
        else:
            return knob, pool.difficulty
        if self.use_knob is True:
            raise ValueError(f"frontier(knob=True) steers by the dataset's difficulty, but {why}. Or leave knob out "
                             f"(auto): prompts are then chosen by their pass-rate estimates alone.")
        if knob is None:
            pool.say(f"frontier: {why}; prompts are chosen by their pass-rate estimates alone (target {self.target:g}).")
        else:
            pool.say(f"warning: frontier: {why}. Prompts are chosen by their pass-rate estimates alone "
                     f"(target {self.target:g}).")
        return None


def _distinct(rows: Sequence[int], keys: Sequence[int]) -> list[int]:
    """``rows`` with one row per prompt (the first), in order."""
    seen, out = set(), []
    for r in rows:
        if keys[r] not in seen:
            seen.add(keys[r])
            out.append(r)
    return out


def _json(x: float) -> float | None:
    return x if math.isfinite(x) else None


@SAMPLERS.add("frontier", description="Prompts whose expected pass rate is nearest a target (0.5): the dataset's "
              "difficulty knob moved by the observed pass rate (AdaRFT) and per-prompt Beta estimates (MoPPS)")
def frontier(target: float = 0.5, knob: bool | str = "auto", step: float = 0.1, explore: float = 0.1,
             candidates: int = 4, prior: float = 2.0, decay: float = 0.9, start: float | None = None) -> Frontier:
    """Prompts whose expected pass rate is nearest ``target``."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0.0 < target < 1.0:
        why = {0.0: "only groups expected all wrong", 1.0: "only groups expected all right"}.get(target, "no pass rate")
        raise ValueError(f"frontier's target is {target!r}: that chooses {why}, flat groups that teach nothing; "
                         f"give a pass rate strictly between 0 and 1 (0.5: groups half right).")
    if knob not in (True, False, "auto"):
        raise ValueError(f"frontier's knob is {knob!r}: give 'auto' (the dataset's difficulty when it declares one "
                         f"with several values), True (required) or False (the pass-rate estimates alone).")
    for name, value, low, high in (("step", step, 0.0, 1.0), ("explore", explore, 0.0, 1.0),
                                   ("decay", decay, 0.0, 1.0)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high \
                or (name != "explore" and value == 0):
            raise ValueError(f"frontier's {name} is {value!r}: give a number in "
                             f"{'[' if name == 'explore' else '('}{low:g}, {high:g}].")
    if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
        raise ValueError(f"frontier's candidates is {candidates!r}: give a whole number of at least 1 (prompts "
                         f"drawn per prompt chosen).")
    if isinstance(prior, bool) or not isinstance(prior, (int, float)) or not 0 < prior < math.inf:
        raise ValueError(f"frontier's prior is {prior!r}: give a positive number of pseudo-counts.")
    return Frontier(float(target), knob, float(step), float(explore), candidates, float(prior), float(decay),
                    None if start is None else float(start))

