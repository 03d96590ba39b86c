"""The math rewards: TRL reward functions ``f(completions, answer, **kwargs)``.

Module-level functions (picklable). Nothing heavy at import: the extraction
module (many compiled regexes) loads on the first call, sympy and math-verify
only in the checker pool.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from grpo_core.text import completion_text

DEFAULT_TIMEOUT = 5.0
_CACHE_SIZE = 16_384
_cache_lock = threading.Lock()
_verdicts: OrderedDict[tuple[str, str | None], tuple[bool, bool]] = OrderedDict()


def _aligned(name: str, completions: Sequence, column: Any) -> list:
    if isinstance(column, (str, bytes)) or not isinstance(column, Sequence):
        raise TypeError(
            f"'{name}' must be a list with one entry per completion (a dataset column), "
            f"got {type(column).__name__} {column!r:.80}."
        )
    if len(column) != len(completions):
        raise ValueError(
            f"'{name}' has {len(column)} entries for {len(completions)} completions; they must align."
        )
    return list(column)


def _cached(key: tuple[str, str | None]) -> tuple[bool, bool] | None:
    with _cache_lock:
        hit = _verdicts.get(key)
        if hit is not None:
            _verdicts.move_to_end(key)
        return hit


def _remember(key: tuple[str, str | None], value: tuple[bool, bool]) -> None:
    with _cache_lock:
        _verdicts[key] = value
        _verdicts.move_to_end(key)
        while len(_verdicts) > _CACHE_SIZE:
            _verdicts.popitem(last=False)
        if key[1] is not None and (key[0], None) not in _verdicts:
            _verdicts[(key[0], None)] = (value[0], False)


def _fast(gold: str, cand: str | None) -> tuple[bool, bool] | None:
    """Decide without sympy when that is provably right: plain decimals on
    both sides compare exactly as decimals, integers and fractions of integers
    exactly as fractions (mixed decimal/fraction pairs go to the checker, which
    rounds floats to 6 places), intervals/pairs of plain numbers bracket by
    bracket and end by end; a known-parseable gold and an identical candidate
    string are equal."""
    from . import extract as ex

    for exact_value in (ex.plain_decimal, ex.plain_rational, ex.plain_interval):
        g = exact_value(gold)
        if g is not None:
            if cand is None:
                return True, False
            c = exact_value(cand)
            if c is not None:
                return True, g == c
    if cand is not None and cand == gold:
        known = _cached((gold, None))
        if known is not None and known[0] is True:
            return True, True
    return None


@dataclass
class _Judged:
    scores: list[float | None]  # 1.0 / 0.0 / None per completion
    extractions: list
    timeouts: int = 0  # items whose check ran out of time
    lost: int = 0  # items lost with a worker that died twice
    unevaluated: int = 0  # answers that left the arithmetic undone (scored 0.0)


def _judge(
    completions: Sequence,
    answer: Any,
    fallback_last_number: bool,
    timeout: float,
    workers: int | None,
    allow_expressions: bool = False,
) -> _Judged:
    """Correctness of every completion, with what went wrong on the way."""
    from . import extract as ex
    from .pool import check_timeout, resolve_workers

    check_timeout(timeout)  # before any early return: bad values fail when the reward is bound
    resolve_workers(workers)
    golds = _aligned("answer", completions, answer)
    extractions = [ex.extract_answer(completion_text(c), fallback_last_number) for c in completions]
    results: list[float | None] = [None] * len(golds)
    pending: dict[tuple[str, str | None], list[int]] = {}
    timeouts = undone = 0
    for i, (gold_obj, ext) in enumerate(zip(golds, extractions)):
        gold = ex.prepare_gold(gold_obj)
        if gold.kind == "none":
            results[i] = None
        elif gold.kind == "text":
            results[i] = 1.0 if ex.normalize_text(ext.answer) == gold.value else 0.0
        else:
            cand = ex.to_math(ext.answer)
            if not allow_expressions and ex.unevaluated(cand, gold.value):
                results[i] = 0.0
                undone += 1
                continue
            key = (cast(str, gold.value), cand)  # a math gold has its value
            verdict = _fast(*key) or _cached(key)
            if verdict is not None:
                results[i] = (1.0 if verdict[1] else 0.0) if verdict[0] else None
            else:
                pending.setdefault(key, []).append(i)
    lost = 0
    if pending:
        keys = list(pending)
        for key, outcome in zip(keys, _check(keys, timeout, workers)):
            if outcome.status == "ok":
                gold_ok, equal = outcome.value
                _remember(key, (bool(gold_ok), bool(equal)))
                score = (1.0 if equal else 0.0) if gold_ok else None
            elif outcome.status == "timeout":  # documented: a check past its limit scores 0.0, and
                timeouts += len(pending[key])  # is not remembered (a busy machine's time-out is no answer)
                score = 0.0
            else:  # its worker died twice (memory cap, crash): 0.0, counted as lost
                lost += len(pending[key])
                score = 0.0
            for i in pending[key]:
                results[i] = score
    return _Judged(results, extractions, timeouts, lost, undone)


def _check(keys: list, timeout: float, workers: int | None) -> list:
    """The checker's outcomes; a check whose worker died is run once more."""
    from . import _worker, pool

    n = pool.resolve_workers(workers)
    outcomes = pool.run(_worker.check, keys, timeout, n)
    again = [i for i, o in enumerate(outcomes) if o.status == "error"]
    if again:
        for i, o in zip(again, pool.run(_worker.check, [keys[i] for i in again], timeout, n)):
            outcomes[i] = o
    return outcomes


def _log(kwargs: dict, name: str, extractions: list, timeouts: int, lost: int = 0, unevaluated: int | None = None
         ) -> None:
    """Extraction failures, timeouts and answers left unevaluated as TRL metrics/columns
    (never fails the reward)."""
    try:
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and extractions:
            missing = sum(e.answer is None for e in extractions)
            log_metric(f"{name}/no_answer", missing / len(extractions))
            log_metric(f"{name}/timeouts", float(timeouts))
            log_metric(f"{name}/lost", float(lost))
            if unevaluated is not None:
                log_metric(f"{name}/unevaluated", unevaluated / len(extractions))
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra(f"{name}/answer", [(e.answer or "")[:200] for e in extractions])
    except Exception:
        pass


# Spellings of "72 or 73" that score 0 against 72 and against 73 (tests/math/test_hedges.py).
HEDGES = (
    r"$\boxed{72} \quad \text{or} \quad \boxed{73}$",
    r"\boxed{72} \text{ or } \boxed{73}",
    r"\(\boxed{72}\) or \(\boxed{73}\)",
    r"\boxed{72}\;\text{or}\;\boxed{73}",
    r"\boxed{72}, \boxed{73}",
    r"\boxed{72}; \boxed{73}",
    r"\boxed{72} / \boxed{73}",
    r"\boxed{72} \quad \boxed{73}",
    "\\boxed{72}\n\n\\boxed{73}",
    r"\boxed{71} \boxed{72} \boxed{73}",
    r"\boxed{72} or maybe \boxed{73}",
    "\\boxed{73}\n\nActually \\boxed{72}",
    r"\boxed{72} \text{ (or } \boxed{73}\text{)}",
    r"\boxed{72 \text{ or } 73}",
    r"\boxed{72 or 73}",
    r"\boxed{72, 73}",
    r"\boxed{72 \lor 73}",
    r"\boxed{\{72, 73\}}",
    r"\boxed{72 \text{ and } 73}",
    "The answer is 72 or 73.",
    "The answer is either 72 or 73",
    "The answer is 72 (or possibly 73).",
    "Answer: 72 or 73",
    "<answer>72 or 73</answer>",
    "<answer>72, 73</answer>",
    "#### 72 or 73",
    "maybe 72, maybe 73",
    "it is 72 or 73",
)


def correctness(
    completions: list,
    answer: list,
    fallback_last_number: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    workers: int | None = None,
    allow_expressions: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """1.0 when the completion's final answer is mathematically equivalent to the gold ``answer``.

    Final answer: the ``<answer>`` block if present (think block ignored), else
    the boxes (several distinct boxed answers are all of them: a set), else
    ``#### x``, else an explicit "final answer is /
    answer:" phrase, else a completion that is nothing but a number ("42",
    "1/2"), else (``fallback_last_number=True``) the last number, unless
    its line hedges ("maybe", "or", "perhaps"); an
    unclosed ``<think>`` has no answer. A retraction ("Wait, I made an error",
    "that is wrong") withdraws the answers before it in every layout:
    "\\boxed{15}. Wait, I made an error ... \\boxed{16}" answers 16 (a hedge,
    "\\boxed{15} or \\boxed{16}", answers neither). Gold: a plain number, LaTeX,
    ``\\boxed{}`` or a GSM8K rationale (``#### 72``). Both are normalized (unicode
    minus and pi, thousands separators, ``1e3``, currency, percent words, "x and y" as a
    set; prose keeps its formulas, "not 72" has no answer) and compared with
    math-verify/sympy (numbers, fractions, radicals, sets, intervals,
    equations, percentages). Word answers ("Paris", "yes") compare as
    normalized text. Plain numbers on both sides compare exactly in process.

    An answer that leaves the arithmetic undone against a plain-number gold
    (``18 + 6``, ``3 \\times 8``, ``\\frac{48}{2}``, ``4!`` for 24) scores 0.0: the
    checker would find it equal, paying a model for restating the question (a model
    trained long enough on level-1 arithmetic learns exactly that).
    ``allow_expressions=True`` pays them; the share is logged as
    ``math.correctness/unevaluated``.

    Returns 1.0 / 0.0, or None when the gold cannot be parsed (never 1.0 for
    an unparseable gold). Each check runs in the worker pool under ``timeout``
    seconds; an item past it (or whose worker died) scores 0.0 and the batch
    still completes. ``workers``: pool size (default ``GRPO_MATH_WORKERS`` or
    CPUs per process on the host).
    """
    judged = _judge(completions, answer, fallback_last_number, timeout, workers, allow_expressions)
    scores = judged.scores
    _log(kwargs, "math.correctness", judged.extractions, judged.timeouts, judged.lost, judged.unevaluated)
    return scores


correctness.__doc__ = (correctness.__doc__ or "") + (
    "\n    A hedge never scores: an answer offering several candidates is the set of\n"
    "    them, which equals no single gold. Tested spellings (0 against 72 and 73):\n"
    + "".join(f"      {h!r}\n" for h in HEDGES)
)


def cosine(
    completions: list,
    answer: list,
    min_value_wrong: float = -1.0,
    max_value_wrong: float = -0.5,
    min_value_correct: float = 0.5,
    max_value_correct: float = 1.0,
    max_len: int = 1000,
    unit: Literal["auto", "chars"] = "auto",
    fallback_last_number: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    workers: int | None = None,
    allow_expressions: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """``math.correctness`` scaled by completion length on a cosine schedule (shorter correct answers earn more).

    open-r1 ``get_cosine_scaled_reward`` / "Demystifying Long CoT" (arXiv
    2502.03373, App. C.1)::

        progress = min(length / max_len, 1)
        r = lo + 0.5 * (hi - lo) * (1 + cos(pi * progress))

    with ``(lo, hi) = (min_value_correct, max_value_correct)`` for a correct
    answer (1.0 at length 0 down to 0.5 at max_len by default) and
    ``(lo, hi) = (max_value_wrong, min_value_wrong)`` for a wrong one (-1.0 at
    length 0 up to -0.5 at max_len: long wrong answers are penalized less).
    Range [min of the four values, max of them]. Length (``unit``): "auto" =
    completion tokens (``completion_ids``, which TRL passes), else characters;
    "chars" = characters always (open-r1's). Beyond max_len the length is
    clamped (open-r1's is not: its cosine turns back up, paying a correct answer
    of 2 * max_len as much as an empty one). None when the gold cannot be parsed
    (open-r1 pays 1.0). Correctness and its other parameters are those of
    ``math.correctness``.
    """
    if max_len <= 0:
        raise ValueError(f"max_len={max_len!r} must be a positive length (tokens).")
    lengths = _lengths(completions, kwargs.get("completion_ids"), unit)
    judged = _judge(completions, answer, fallback_last_number, timeout, workers, allow_expressions)
    scores = judged.scores
    _log(kwargs, "math.cosine", judged.extractions, judged.timeouts, judged.lost, judged.unevaluated)
    out: list[float | None] = []
    for score, length in zip(scores, lengths):
        if score is None:
            out.append(None)
            continue
        progress = min(length / max_len, 1.0)
        if score == 1.0:
            lo, hi = min_value_correct, max_value_correct
        else:
            lo, hi = max_value_wrong, min_value_wrong
        r = lo + 0.5 * (hi - lo) * (1.0 + math.cos(progress * math.pi))
        # held between its two ends: at length 0, lo + (hi - lo) can round past hi (1.0 + (1e-121 - 1.0) is 0.0)
        out.append(float(min(max(r, min(lo, hi)), max(lo, hi))))
    return out


def cosine_range(
    min_value_wrong: float = -1.0,
    max_value_wrong: float = -0.5,
    min_value_correct: float = 0.5,
    max_value_correct: float = 1.0,
    **_: Any,
) -> tuple[float, float]:
    """math.cosine's range for its bound parameters: every score lies between two of the four values."""
    values = (min_value_wrong, max_value_wrong, min_value_correct, max_value_correct)
    return min(values), max(values)


LENGTH_UNITS = ("auto", "chars")


def _lengths(completions: Sequence, completion_ids: Any, unit: str) -> list[int]:
    """Completion lengths: tokens when TRL passes ``completion_ids`` and ``unit`` is "auto", else characters."""
    if unit not in LENGTH_UNITS:
        raise ValueError(f"unit must be one of {', '.join(LENGTH_UNITS)}, got {unit!r}.")
    if unit == "auto" and completion_ids is not None:
        return [len(ids) for ids in _aligned("completion_ids", completions, completion_ids)]
    return [len(completion_text(c)) for c in completions]


def _groups(prompts: Any, n: int, group_by: str) -> list[list[int]]:
    """Indices of the completions normalised together: all of them, or those of each prompt."""
    if group_by == "batch" or prompts is None:
        return [list(range(n))] if n else []
    groups: dict[str, list[int]] = {}
    for i, prompt in enumerate(_aligned("prompts", range(n), prompts)):
        groups.setdefault(prompt if isinstance(prompt, str) else repr(prompt), []).append(i)
    return list(groups.values())


def kimi_length(
    completions: list,
    answer: list,
    unit: Literal["auto", "chars"] = "auto",
    group_by: Literal["batch", "prompt"] = "batch",
    fallback_last_number: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    workers: int | None = None,
    allow_expressions: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """Kimi 1.5's length reward (open-r1's ``length``): shortest of the batch +0.5, longest -0.5, wrong never above 0.

    Kimi k1.5 (arXiv 2501.12599, section 2.3.3), as open-r1's len_reward computes it::

        lambda = 0.5 - (L - min_L) / (max_L - min_L)
        r = lambda          if the answer is correct (math.correctness)
        r = min(0, lambda)  if it is wrong
        r = 0.0 for all     when max_L == min_L

    Range [-0.5, 0.5]. min_L and max_L run over the completions of one call
    (``group_by="batch"``, open-r1's): TRL calls a reward once per process and
    generation batch, with per_device_train_batch_size * steps_per_generation
    completions: several prompts, and on several processes only this process's
    share of each prompt's num_generations completions. ``group_by="prompt"``
    normalises each prompt's completions within the call separately (Kimi's
    definition, up to that share); without ``prompts`` the call is one group.
    L (``unit``): "auto" = tokens when TRL passes completion_ids, else
    characters; "chars" = characters always (open-r1's). None where the gold
    cannot be parsed (open-r1 treats it as correct); its length still counts
    for min_L/max_L. Other parameters are those of ``math.correctness``.
    """
    if group_by not in ("batch", "prompt"):
        raise ValueError(f"group_by must be 'batch' or 'prompt', got {group_by!r}.")
    lengths = _lengths(completions, kwargs.get("completion_ids"), unit)
    judged = _judge(completions, answer, fallback_last_number, timeout, workers, allow_expressions)
    scores = judged.scores
    _log(kwargs, "math.kimi_length", judged.extractions, judged.timeouts, judged.lost, judged.unevaluated)
    out: list[float | None] = [None] * len(completions)
    for members in _groups(kwargs.get("prompts"), len(completions), group_by):
        low = min(lengths[i] for i in members)
        spread = max(lengths[i] for i in members) - low
        for i in members:
            if scores[i] is None:
                continue
            lam = 0.5 - (lengths[i] - low) / spread if spread else 0.0
            out[i] = lam if scores[i] == 1.0 else min(0.0, lam)
    return out


def _bound(values: list | None, i: int) -> float | None:
    from . import extract as ex

    if values is None:
        return None
    v = values[i]
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        return ex.number_value(ex.to_math(v, gold=True))
    return None


def numeric(
    completions: list,
    answer: list,
    atol: float = 0.0,
    rtol: float = 0.0,
    fallback_last_number: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """1.0 when the final answer is a number within ``atol``/``rtol`` of the gold (or within the ``lower``/``upper`` columns).

    MedCalc-Bench style. Final answer by the chain of ``math.correctness``
    (plus JSON ``"answer": x``); it must be a single number: ``72``,
    ``1,234.5``, ``-0.5``, ``\\frac{3}{4}``, ``3/4``, ``1.5e3``, with a unit,
    ``%`` or degree sign ignored (``12%`` reads 12) and ``x = 5`` read as 5.
    Correct when ``|x - gold| <= atol + rtol * |gold|`` (plus 1e-9 relative for
    float noise). When the dataset has ``lower`` / ``upper`` columns (optional;
    they arrive as kwargs) and an item has them, the item is correct when
    ``lower <= x <= upper`` instead. None when the gold is not a number and the
    item has no bounds. Pure Python: no sympy, no pool.
    """
    from . import extract as ex

    if atol < 0 or rtol < 0:
        raise ValueError(f"atol={atol!r} and rtol={rtol!r} must be >= 0.")
    golds = _aligned("answer", completions, answer)
    lower = kwargs.get("lower")
    upper = kwargs.get("upper")
    lower = _aligned("lower", completions, lower) if lower is not None else None
    upper = _aligned("upper", completions, upper) if upper is not None else None
    extractions = []
    out: list[float | None] = []
    for i, (comp, gold_obj) in enumerate(zip(completions, golds)):
        ext = ex.extract_answer(completion_text(comp), fallback_last_number)
        extractions.append(ext)
        x = ex.number_value(ex.to_math(ext.answer))
        lo, hi = _bound(lower, i), _bound(upper, i)
        if lo is not None or hi is not None:
            if x is None:
                out.append(0.0)
                continue
            ok = (lo is None or x >= lo - 1e-9 * abs(lo)) and (
                hi is None or x <= hi + 1e-9 * abs(hi)
            )
            out.append(1.0 if ok else 0.0)
            continue
        if isinstance(gold_obj, (int, float)) and not isinstance(gold_obj, bool):
            g = float(gold_obj) if math.isfinite(gold_obj) else None
        else:
            g = ex.number_value(ex.to_math(ex.gold_answer_text(gold_obj), gold=True))
        if g is None:
            out.append(None)
        elif x is None:
            out.append(0.0)
        else:
            out.append(1.0 if abs(x - g) <= atol + max(rtol, 1e-9) * abs(g) else 0.0)
    _log(kwargs, "math.numeric", extractions, 0)
    return out


def exact(
    completions: list,
    answer: list,
    fallback_last_number: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """1.0 when the final answer equals the gold as a normalized string.

    Final answer by the chain of ``math.correctness``; gold after ``####`` or
    in its last ``\\boxed{}`` if any. Normal form: surrounding ``$``,
    ``\\(..\\)``, ``**`` and ``\\text{}`` / ``\\textbf{}`` / ``\\mathrm{}`` /
    ``\\boxed{}`` wrappers stripped, lower case, runs of whitespace as one
    space, a trailing period dropped. No mathematics: ``0.5`` is not ``1/2``.
    None when the gold is empty.
    """
    from . import extract as ex

    golds = _aligned("answer", completions, answer)
    extractions = []
    out: list[float | None] = []
    for comp, gold_obj in zip(completions, golds):
        ext = ex.extract_answer(completion_text(comp), fallback_last_number)
        extractions.append(ext)
        gold = ex.normalize_exact(ex.gold_answer_text(gold_obj))
        if gold is None:
            out.append(None)
        else:
            out.append(1.0 if ex.normalize_exact(ext.answer) == gold else 0.0)
    _log(kwargs, "math.exact", extractions, 0)
    return out


REWARDS = {
    "math.correctness": correctness,
    "math.numeric": numeric,
    "math.exact": exact,
    "math.cosine": cosine,
    "math.kimi_length": kimi_length,
}

# (low, high) each reward can score, or a function of its bound parameters returning it;
# grpo check takes the high end as full marks.
RANGES = {
    "math.correctness": (0.0, 1.0),
    "math.numeric": (0.0, 1.0),
    "math.exact": (0.0, 1.0),
    "math.cosine": cosine_range,
    "math.kimi_length": (-0.5, 0.5),
}
