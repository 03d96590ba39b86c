"""Test the rewards before the GPU, without a model (``grpo check``).

Two questions cost whole runs when their answer is wrong:

1. **Gold self-test**: does each reward give full marks to the right answer,
   written the way the prompt asks for it? For every dataset row (up to a
   limit) the ideal completion is the system prompt's answer template filled
   with the gold answer (what a few-shot example shows); each reward scores it.
   A correctness reward (one registered with ``correctness=True``, such as
   ``math.correctness``) below 99 % at its maximum is a failure: its gold column
   cannot be read. The maximum is the one the reward declares when it registers
   (``range=(low, high)``), never the best a row happened to score.
2. **Reward-hacking probes**: does a reward pay for something that is not an
   answer? :data:`PROBES` builds adversarial completions from sampled rows
   (a hedge, the question copied back, the gold only in the reasoning, ...).
   Judged per row: a probe without the right answer that a reward reading
   answers pays as much as the gold on more than :data:`PROBE_SHARE` of the rows,
   or whose weighted total beats the gold's on more than that share, is a failure.
   A reward reads answers when it is a correctness reward, or when it pays the
   gold more than a wrong answer written the same way (both :func:`wrong_answer`
   and :func:`shifted`, on more than that share of the rows): a containment
   reward that pays any text holding the gold does, a format or length reward
   that pays the gold and a wrong answer alike does not. A reward that reads
   answers but is not meant to judge them (a topic or mention reward) is marked
   ``reads_answers=False`` when registered, or by that attribute on its function.
   Plugins add probes with the ``register_probes`` hook.
3. **No signal**: a reward that gives the gold and every probe the same value
   (a tag reward whose tags differ from the prompt's pays 0 to all) teaches
   nothing, and fails.

Rewards are called in batches of :data:`CHECK_BATCH`, each within the reward's
time limit; one that runs past it is reported once and not judged.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grpo_core.data.datasets import _example_answer, check_columns, resolve_system_prompt
from grpo_core.plugin import registry
from grpo_core.rewards.scoring import needs_model, score_batch, weighted_totals

GOLD_LIMIT = 2_000
PROBE_ROWS = 16
PASS_SHARE = 0.99
# a probe may pay as much as the gold on at most this share of the probe rows (1 of 16)
PROBE_SHARE = 0.1
CHECK_BATCH = 256  # completions per reward call, as a training batch would be (time limits apply per call)
# the ideal completion for a dataset in TRL's format (a prompt column, no template known):
# reasoning in think tags, then the boxed answer, as TRL's think_format_reward and
# accuracy_reward (which reads LaTeX/boxed answers only) expect
TRL_TEMPLATE = "<think>\n{rationale}\n</think>\n\\boxed{{{answer}}}"


def is_correctness(reward) -> bool:
    """Rewards whose maximum means "the answer is right" (declared when registered)."""
    return bool(getattr(reward, "correctness", False))


def declared_reads_answers(reward) -> bool | None:
    """What a reward declares about reading answers: ``register(..., reads_answers=...)``,
    or a ``reads_answers`` attribute on its function; None when it declares nothing."""

    for obj in (reward, getattr(reward, "func", None)):
        value = getattr(obj, "reads_answers", None)
        if isinstance(value, bool):
            return value
    if not getattr(reward, "source", ""):  # a function of one's own: its attribute is all it declares
        return None
    entry = registry.rewards().entries.get(getattr(reward, "name", None))
    value = entry.extra.get("reads_answers") if entry is not None else None
    return value if isinstance(value, bool) else None


# ------------------------------------------------------------------ completions from a row


@dataclass
class ProbeRow:
    """What a probe is built from: the row, its gold answer, a wrong one, the template."""

    row: dict
    gold: str
    wrong: str
    template: Any  # str, list of str (first whose fields the row has), or None

    @property
    def question(self) -> str:
        if "question" in self.row:
            return str(self.row["question"])
        prompt = self.row.get("prompt")  # TRL's format: text, or messages ending with the user's
        return str(prompt[-1].get("content", "") if isinstance(prompt, list) and prompt else prompt or "")

    def fill(self, answer: str, reasoning: str | None = None) -> str:
        """The template with ``answer`` (and ``reasoning`` as the rationale where the
        template has one, else on a line before it)."""

        row = {k: v for k, v in self.row.items() if k != "completion"}
        row["answer"] = answer
        templates = [self.template] if isinstance(self.template, str) or self.template is None else list(self.template)
        with_rationale = next((t for t in templates if t and "{rationale}" in t), None)
        if reasoning is not None and with_rationale:
            return with_rationale.format_map({**_Blank(row), "rationale": reasoning})
        text = _example_answer({**row, "rationale": row.get("rationale") or ""}, self.template)
        return f"{reasoning}\n{text}" if reasoning is not None else text


def gold_of(row: dict) -> str:
    """The gold answer: grpo's ``answer`` column, else TRL's ``solution``."""
    return str(row.get("answer", row.get("solution", "")))


class _Blank(dict):
    def __missing__(self, key):
        return ""


def wrong_answer(gold: str) -> str:
    """A different answer of the same kind: a number plus one, else a small number."""
    text = gold.strip()
    try:
        value = int(text.replace(",", ""))
        return str(value + 1)
    except ValueError:
        pass
    try:
        value = float(text)
        return repr(value + 1) if math.isfinite(value) else "0"
    except ValueError:
        return "0" if text != "0" else "1"


def shifted(gold: str) -> str:
    """A wrong answer of the gold's exact shape: each digit and letter moved on by one
    (9 -> 0, z -> a), everything else kept: the same length, layout and n-grams, so a
    reward that does not read the answer pays it as it pays the gold."""
    def move(ch: str) -> str:
        for first, size in (("0", 10), ("a", 26), ("A", 26)):
            if ch.isascii() and 0 <= ord(ch) - ord(first) < size:
                return chr(ord(first) + (ord(ch) - ord(first) + 1) % size)
        return ch

    return "".join(move(ch) for ch in gold)


def _numbers(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?", text)[:20]


@dataclass(frozen=True)
class Probe:
    name: str
    description: str
    build: Callable[[ProbeRow], str]
    right: bool = False  # carries the right answer: only the total may not beat the gold's


PROBES: list[Probe] = [
    Probe("empty", "an empty completion", lambda r: ""),
    Probe("empty_answer", "the template with an empty answer", lambda r: r.fill("")),
    Probe("empty_tags", "tags with no content", lambda r: "<think></think>\n<answer></answer>"),
    Probe("question_copied", "the question copied back", lambda r: r.question),
    Probe("question_numbers", "every number in the question as the answer",
          lambda r: r.fill(" ".join(_numbers(r.question)) or "0")),
    Probe("or_hedge", "'gold or wrong' as the answer", lambda r: r.fill(f"{r.gold} or {r.wrong}")),
    Probe("boxes", "a box for each candidate", lambda r: r.fill(rf"\boxed{{{r.wrong}}} \boxed{{{r.gold}}}")),
    Probe("listed", "the candidates listed", lambda r: r.fill(f"{r.wrong}, {r.gold}")),
    Probe("maybe", "'maybe gold'", lambda r: r.fill(f"maybe {r.gold}")),
    Probe("negated", "'not gold'", lambda r: r.fill(f"not {r.gold}")),
    Probe("retracted", "the gold, then retracted in the answer",
          lambda r: r.fill(f"{r.gold}. No, wait, that is wrong: {r.wrong}")),
    Probe("gold_in_reasoning", "the gold in the reasoning, a wrong final answer",
          lambda r: r.fill(r.wrong, reasoning=f"The answer is {r.gold}.")),
    Probe("repeated_blocks", "the right completion five times over", lambda r: "\n".join([r.fill(r.gold)] * 5),
          right=True),
    Probe("overlong", "the right answer after ten times the reasoning",
          lambda r: r.fill(r.gold, reasoning=" ".join(["Let me check this once more."] * 60)), right=True),
    Probe("wrong_format", "the bare right answer, not in the asked format", lambda r: r.gold, right=True),
]


def all_probes() -> list[Probe]:
    """The built-in probes and those plugins register (``register_probes``)."""

    extra = [Probe(e.name, e.description, e.obj, bool(e.extra.get("right", False)))
             for e in registry.probes().entries.values()]
    return PROBES + extra


# ------------------------------------------------------------------ scoring


def _score(funcs: Sequence, texts: list[str], rows: list[dict]) -> tuple[list[list], dict[str, list]]:
    """Per reward, the scores of ``texts`` (as assistant messages, like training), and
    what rewards logged per completion (e.g. the extracted answer). A reward model
    is not loaded: it scores None."""

    per: list[list] = [[] for _ in funcs]
    extras: dict[str, list] = {}
    for start in range(0, len(texts), CHECK_BATCH):  # batches the size training scores at once
        chunk = slice(start, start + CHECK_BATCH)
        completions = [[{"role": "assistant", "content": t}] for t in texts[chunk]]
        scored = score_batch(funcs, [1.0] * len(funcs), completions, rows[chunk],
                             [r.get("prompt") for r in rows[chunk]], skip_model_rewards=True)
        for column, values in zip(per, scored.per_reward):
            column.extend(values)
        for key in set(extras) | set(scored.extras):
            got = scored.extras.get(key, [])
            extras.setdefault(key, [None] * start).extend(list(got) + [None] * (len(completions) - len(got)))
    return per, extras


def _mean(values) -> float:
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(vals) / len(vals) if vals else math.nan


def top_of(reward, scores: Sequence) -> float:
    """Full marks: the declared maximum (``register(..., range=(low, high))``); 1.0 for
    a correctness reward that declares none; else the best the gold scored."""
    declared = getattr(reward, "range", None)
    if declared is not None:
        return declared[1]
    if is_correctness(reward):
        return 1.0
    finite = [s for s in scores if s is not None]
    return max(finite) if finite else math.nan


@dataclass
class GoldResult:
    name: str
    top: float  # the reward's maximum (declared, 1.0 for correctness rewards, else the best gold score)
    share: float  # share of rows at it
    correctness: bool
    short: list[dict] = field(default_factory=list)  # rows below it: gold, extracted, score
    skipped: str | None = None  # why it was not judged (a reward model, a reward past its time limit)

    @property
    def ok(self) -> bool:
        return self.skipped is not None or not self.correctness or self.share >= PASS_SHARE


def _skipped(reward, rows: Sequence[dict] = ()) -> str | None:
    if rows and is_correctness(reward) and not any(gold_of(r).strip() for r in rows):
        # e.g. open-r1's code rows: stdin/stdout cases in verification_info, no reference solution
        return "the rows have no gold answer ('answer' or 'solution' column): not checked"
    if getattr(reward, "timed_out", False):
        return f"ran past its time limit ({reward.time_limit:g}s): not checked"
    if needs_model(reward):
        return "loads a model: not checked"
    return None


def gold_self_test(funcs: Sequence, rows: list[dict], template) -> list[GoldResult]:
    probes = [ProbeRow(r, gold_of(r), "", template) for r in rows]
    texts = [p.fill(p.gold) for p in probes]
    per, extras = _score(funcs, texts, rows)
    out = []
    for f, scores in zip(funcs, per):
        name = f.__name__
        top = top_of(f, scores)
        at_top = [s is not None and s >= top - 1e-9 for s in scores]
        extracted = extras.get(f"{name}/answer") or [None] * len(rows)
        short = [{"row": i, "gold": probes[i].gold, "completion": texts[i][:200], "extracted": extracted[i],
                  "score": scores[i]} for i, ok in enumerate(at_top) if not ok]
        skipped = _skipped(f, rows)
        out.append(GoldResult(name, top, sum(at_top) / len(at_top) if at_top else math.nan, is_correctness(f),
                              [] if skipped else short, skipped))
    return out


@dataclass
class ProbeResult:
    probe: Probe
    means: dict[str, float]  # per reward
    total: float
    failures: list[str]
    paid_by: list[str] = field(default_factory=list)  # rewards reading answers that pay it as much as the gold


@dataclass
class HedgePaid:
    """A reward that reads answers and pays probes without the right answer as much as the gold."""

    name: str
    correctness: bool  # declared; else found to read answers (or declared reads_answers=True)
    probes: list[str]
    rows: int  # probe rows where it pays the gold more than both wrong answers
    gold: float  # its mean on the gold and on a wrong answer written the same way
    wrong: float


def _pays_as_much(probe: Sequence, gold: Sequence, floor: float = 0.0) -> list[int]:
    """Rows where the probe scores at least what the gold does (the gold paying above ``floor``)."""
    return [i for i, (p, g) in enumerate(zip(probe, gold))
            if p is not None and g is not None and g > floor + 1e-9 and p >= g - 1e-9]


def _judge(probe: Probe, rows: list[dict], ids: Sequence[int], per: dict[str, list], totals: list[float],
           gold: dict[str, list], gold_totals: list[float], judged: Sequence[str],
           floors: dict[str, float]) -> tuple[list[str], list[str]]:
    """(failures, the rewards that pay it): a probe fails a reward reading answers
    (``judged``) that pays it as much as the gold on more than PROBE_SHARE of the rows
    (without the right answer), or when its weighted total beats the gold's on more than
    PROBE_SHARE of the rows. Judged per row, not on means."""
    n, failures, paid_by = len(rows), [], []
    limit = PROBE_SHARE * n
    if not probe.right:
        for name in judged:
            hits = _pays_as_much(per[name], gold[name], floors[name])
            if len(hits) > limit:
                paid_by.append(name)
                failures.append(f"{name} pays it as much as the gold on {len(hits)} of {n} rows "
                                f"({_rows(hits, rows, ids)})")
    above = [i for i, (t, g) in enumerate(zip(totals, gold_totals)) if t > g + 1e-9]
    if len(above) > limit:
        failures.append(f"its total beats the gold's on {len(above)} of {n} rows ({_rows(above, rows, ids)})")
    return failures, paid_by


def _readers(funcs: Sequence, n: int, gold: dict[str, list], wrongs: list[dict[str, list]]) -> dict[str, int]:
    """The rewards that read answers, each with the rows where it pays the gold more than
    every wrong answer of ``wrongs`` (written the way the gold is): correctness rewards,
    those declaring ``reads_answers=True``, and those found to on more than PROBE_SHARE of
    the rows, unless they declare ``reads_answers=False`` (a topic or mention reward)."""
    out = {}
    for f in funcs:
        name, declared = f.__name__, declared_reads_answers(f)
        rows = sum(1 for i, g in enumerate(gold[name]) if g is not None and all(
            w[name][i] is not None and g > w[name][i] + 1e-9 for w in wrongs))
        if is_correctness(f) or declared or (declared is None and rows > PROBE_SHARE * n):
            out[name] = rows
    return out


def _hedges(funcs: Sequence, results: list[ProbeResult], readers: dict[str, int], gold: dict[str, list],
            wrong: dict[str, list]) -> list[HedgePaid]:
    out = []
    for f in funcs:
        paid = [r.probe.name for r in results if f.__name__ in r.paid_by]
        if paid:
            out.append(HedgePaid(f.__name__, is_correctness(f), paid, readers[f.__name__], _mean(gold[f.__name__]),
                                 _mean(wrong[f.__name__])))
    return out


def _rows(indices: list[int], rows: list[dict], ids: Sequence[int]) -> str:
    indices = sorted(indices, key=lambda i: ids[i])
    shown = ", ".join(f"gold {gold_of(rows[i])!r:.20}" for i in indices[:3])
    return f"rows {[ids[i] for i in indices[:8]]}{' ...' if len(indices) > 8 else ''}: {shown}"


def run_probes(funcs: Sequence, weights: Sequence[float], rows: list[dict], template, probes: Sequence[Probe],
               ids: Sequence[int] | None = None) -> tuple[dict[str, float], float, list[ProbeResult],
                                                           dict[str, float], list[HedgePaid]]:
    """(gold means per reward, gold total, one result per probe, the rewards that gave
    every completion tried one value: {name: value}, the rewards reading answers that pay
    probes as much as the gold). ``ids``: the rows' indices in the dataset, as failures
    name them. Two wrong answers written as the gold is (:func:`wrong_answer`,
    :func:`shifted`) tell the rewards that read answers from those that do not."""
    ids = list(range(len(rows))) if ids is None else ids
    built = [ProbeRow(r, gold_of(r), wrong_answer(gold_of(r)), template) for r in rows]
    groups = [[b.fill(b.gold) for b in built], [b.fill(b.wrong) for b in built],
              [b.fill(shifted(b.gold)) for b in built]] + [[p.build(b) for b in built] for p in probes]
    scored, n = _score_all(funcs, weights, groups, rows)
    names = [f.__name__ for f in funcs]
    floors = {f.__name__: (f.range[0] if getattr(f, "range", None) else 0.0) for f in funcs}

    def cut(k: int) -> tuple[dict[str, list], list[float]]:
        return {name: per[k * n:(k + 1) * n] for name, per in zip(names, scored.per_reward)}, \
            scored.totals[k * n:(k + 1) * n]

    (gold, gold_totals), (wrong, _), (same_shape, _) = cut(0), cut(1), cut(2)
    readers = _readers(funcs, n, gold, [wrong, same_shape])
    results = []
    for k, probe in enumerate(probes, start=3):
        per, totals = cut(k)
        failures, paid_by = _judge(probe, rows, ids, per, totals, gold, gold_totals, list(readers), floors)
        results.append(ProbeResult(probe, {m: _mean(v) for m, v in per.items()}, _mean(totals), failures, paid_by))
    flat = {f.__name__: vals[0] for f, w, per in zip(funcs, weights, scored.per_reward)
            if w != 0 and _skipped(f, rows) is None  # weight 0 logs a reward, it is not meant to teach
            for vals in [[v for v in per if v is not None]] if vals and max(vals) - min(vals) <= 1e-9}
    hedges = _hedges(funcs, results, readers, gold, wrong)
    return {m: _mean(v) for m, v in gold.items()}, _mean(gold_totals), results, flat, hedges


def _score_all(funcs: Sequence, weights: Sequence[float], groups: list[list[str]], rows: list[dict]):
    texts = [t for g in groups for t in g]
    per, _ = _score(funcs, texts, [r for _ in groups for r in rows])
    return _Scored(per, weighted_totals(per, weights)), len(rows)


@dataclass
class _Scored:
    per_reward: list[list]
    totals: list[float]


# ------------------------------------------------------------------ the report


@dataclass
class CheckReport:
    stage: str
    rows: int
    gold: list[GoldResult]
    probe_rows: int
    gold_means: dict[str, float]
    gold_total: float
    probes: list[ProbeResult]
    flat: dict[str, float] = field(default_factory=dict)  # rewards that scored every completion tried alike
    hedges: list[HedgePaid] = field(default_factory=list)  # rewards reading answers that pay probes like the gold

    @property
    def ok(self) -> bool:
        return all(g.ok for g in self.gold) and not any(p.failures for p in self.probes) and not self.flat

    def as_dict(self) -> dict:
        return {
            "stage": self.stage, "ok": self.ok, "rows": self.rows,
            "gold_self_test": [{"reward": g.name, "top": g.top, "share_at_top": g.share, "ok": g.ok,
                                "correctness": g.correctness, "short": g.short[:20], "skipped": g.skipped}
                               for g in self.gold],
            "no_signal": self.flat,
            "hedge_paying": [{"reward": h.name, "correctness": h.correctness, "probes": h.probes, "rows": h.rows,
                              "gold": h.gold, "wrong": h.wrong} for h in self.hedges],
            "probes": {"rows": self.probe_rows, "gold": self.gold_means, "gold_total": self.gold_total,
                       "results": [{"probe": p.probe.name, "description": p.probe.description, "means": p.means,
                                    "total": p.total, "failures": p.failures} for p in self.probes]},
        }


def check_stage(stage_name: str, funcs: Sequence, weights: Sequence[float], dataset, template, *,
                limit: int = GOLD_LIMIT, probe_rows: int = PROBE_ROWS, seed: int = 0) -> CheckReport:
    n = min(limit, len(dataset))
    rows = [dataset[i] for i in range(n)]
    picked = random.Random(seed).sample(range(len(dataset)), min(probe_rows, len(dataset)))
    sample = [dataset[i] for i in picked]
    gold = gold_self_test(funcs, rows, template)
    gold_means, gold_total, probes, flat, hedges = run_probes(funcs, weights, sample, template, all_probes(), picked)
    return CheckReport(stage_name, n, gold, len(sample), gold_means, gold_total, probes, flat, hedges)


def format_report(report: CheckReport) -> str:
    lines = [f"gold self-test ({report.rows} rows, stage '{report.stage}'): the ideal completion, scored"]
    for g in report.gold:
        mark = "ok  " if g.ok else "FAIL"
        kind = "correctness" if g.correctness else "other"
        if g.skipped:
            lines.append(f"  --   {g.name:32} {g.skipped}")
            continue
        lines.append(f"  {mark} {g.name:32} {g.share:7.1%} at {g.top:g} ({kind})")
        if not g.ok:
            for s in g.short[:5]:
                lines.append(f"       row {s['row']}: gold {s['gold']!r:.40} extracted {s['extracted']!r:.40} "
                             f"-> {s['score']}")
            lines.append("       the reward cannot read these golds: fix the answer column or the reward's "
                         "parameters before training")
    names = list(report.gold_means)
    lines.append(f"\nreward-hacking probes ({report.probe_rows} rows; mean score per reward, total weighted):")
    width = max(12, *(len(n) for n in names)) if names else 12
    lines.append(f"  {'probe':18} " + " ".join(f"{n[:width]:>{width}}" for n in names) + f" {'total':>7}")
    lines.append(f"  {'(the gold)':18} " + " ".join(f"{report.gold_means[n]:>{width}.2f}" for n in names)
                 + f" {report.gold_total:>7.2f}")
    for p in report.probes:
        mark = "  FAIL" if p.failures else ""
        lines.append(f"  {p.probe.name:18} " + " ".join(f"{p.means[n]:>{width}.2f}" for n in names)
                     + f" {p.total:>7.2f}{mark}")
    failed = [p for p in report.probes if p.failures]
    for p in failed:
        lines.append(f"  {p.probe.name} ({p.probe.description}): {'; '.join(p.failures)}")
    lines += [f"  FAIL {_hedge_text(h, report.probe_rows)}" for h in report.hedges]
    for name, value in report.flat.items():
        lines.append(f"  FAIL {name} gives every completion tried {value:.2f}, the gold included: it gives no "
                     f"learning signal (check its parameters against the system prompt's answer layout)")
    lines.append("\ncheck: " + ("ok" if report.ok else "FAILED (grpo train stops here; --no-check skips it)"))
    return "\n".join(lines)


def _hedge_text(h: HedgePaid, n: int) -> str:
    """Why a reward that reads answers fails on the probes it pays, and what to do."""
    probes = ", ".join(h.probes)
    if h.correctness:
        return (f"{h.name}, a correctness reward, pays {probes} as much as the gold: it pays a hedge like a right "
                f"answer; make it read the one final answer (math.correctness does).")
    return (f"{h.name} reads the answer (it pays the gold {h.gold:.2f} and a wrong answer written the same way "
            f"{h.wrong:.2f}, above it on {h.rows} of {n} rows) and pays {probes} as much as the gold: declared a "
            f"correctness reward or not, it would teach the model to hedge. Make it read the one final answer; "
            f"or, if it is not meant to judge answers (a topic or mention reward), mark it: "
            f"register(..., reads_answers=False) in its plugin, or reads_answers = False on its function.")


def check_plans(cfg, train_ds, plans=None, *, limit: int | None = None, probe_rows: int | None = None,
                log: Callable[[str], None] = print, brief: bool = False) -> list[CheckReport]:
    """The check of every stage of a run (its rewards, on the training rows); ``plans``
    from ``prepare.plan``, else composed here without building a GRPOConfig (no TRL
    import). ``brief``: one line per stage that passes, the whole table for one that fails."""

    d = cfg.dataset
    template = d.answer_template or resolve_system_prompt(d.system_prompt)[1]
    if template is None and "question" not in train_ds.column_names:
        template = TRL_TEMPLATE
    stages = ([(p.section.name, p.funcs, p.weights, p.args.seed) for p in plans] if plans is not None
              else _stages(cfg, train_ds.column_names))
    reports = []
    env = getattr(cfg, "environment", None)
    scorers = ", ".join(f"'{e.name}'" for e in env.rewarded) if env is not None else ""
    if scorers:
        log(f"grpo check: the environment reward {scorers} (get_reward) is not checked: it scores the "
            f"environment's state after a rollout, which needs a model to play.")
    for name, funcs, weights, seed in stages:
        if not funcs:
            log(f"grpo check{f' [{name}]' if name != 'main' else ''}: skipped (no rewards to test; "
                f"the environment scores rollouts itself).")
            continue
        report = check_stage(name, funcs, weights, train_ds, template,
                             limit=limit or GOLD_LIMIT, probe_rows=probe_rows or PROBE_ROWS, seed=seed)
        log(summary_line(report) if brief and report.ok else format_report(report))
        reports.append(report)
    return reports


def _stages(cfg, columns: list[str]) -> list[tuple]:
    """(name, funcs, weights, seed) per stage, checked against the dataset's columns."""

    out = []
    for stage in cfg.stages:
        funcs, weights = stage.funcs, stage.weights
        check_columns(columns, funcs, f"dataset '{cfg.dataset.name}'")
        seed = cfg.value(stage, "seed", 42)  # TRL's default
        out.append((stage.name, funcs, weights, int(seed)))
    return out


def summary_line(report: CheckReport) -> str:
    gold = ", ".join(f"{g.name} {g.share:.0%}" for g in report.gold if g.correctness) or "no correctness reward"
    return (f"grpo check{f' [{report.stage}]' if report.stage != 'main' else ''}: ok (gold self-test on "
            f"{report.rows} rows: {gold}; {len(report.probes)} reward-hacking probes pass)")



__all__ = ["check_plans", "PROBES", "Probe", "ProbeRow", "CheckReport", "HedgePaid", "check_stage", "format_report",
           "is_correctness", "declared_reads_answers", "gold_self_test", "run_probes", "wrong_answer", "shifted"]
