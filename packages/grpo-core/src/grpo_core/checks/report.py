"""grpo check's report: the per-stage results, the table printed before training, the one-line summary."""

from __future__ import annotations

from dataclasses import dataclass, field

from grpo_core.checks.probes import Probe

PASS_SHARE = 0.99


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


@dataclass
class RewardErrors:
    """A reward that raised or returned no number on some completions of the check:
    those scored None and were not judged. Past ``max_share`` (``health.max_reward_errors``)
    it fails, as training would stop on it."""

    name: str
    failed: int
    items: int  # completions it was called on
    max_share: float

    @property
    def ok(self) -> bool:
        return self.failed <= self.max_share * self.items

    def text(self) -> str:
        share = f"{self.failed / self.items:.1%}" if self.items else "all"
        if self.ok:
            return (f"{self.name} failed on {self.failed} of {self.items} completions ({share}, within "
                    f"health.max_reward_errors {self.max_share:g}): those scored None and were not judged; "
                    f"training counts them in rewards/{self.name}/errors and goes on")
        return (f"{self.name} failed on {self.failed} of {self.items} completions ({share} > "
                f"health.max_reward_errors {self.max_share:g}): training would stop on it. Fix the reward (its "
                f"first failure is shown above), drop it from the rewards list, or raise health.max_reward_errors")


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
    errors: list[RewardErrors] = field(default_factory=list)  # rewards that failed on some completions
    answer_layout: bool = True  # the probes were written in an answer layout (a template was known)

    @property
    def ok(self) -> bool:
        return (all(g.ok for g in self.gold) and not any(p.failures for p in self.probes) and not self.flat
                and all(e.ok for e in self.errors))

    def as_dict(self) -> dict:
        return {
            "stage": self.stage, "ok": self.ok, "rows": self.rows,
            "gold_self_test": [{"reward": g.name, "top": g.top, "share_at_top": g.share, "ok": g.ok,
                                "correctness": g.correctness, "short": g.short[:20], "skipped": g.skipped}
                               for g in self.gold],
            "no_signal": self.flat,
            "reward_errors": [{"reward": e.name, "failed": e.failed, "items": e.items, "max_share": e.max_share,
                               "ok": e.ok} for e in self.errors],
            "hedge_paying": [{"reward": h.name, "correctness": h.correctness, "probes": h.probes, "rows": h.rows,
                              "gold": h.gold, "wrong": h.wrong} for h in self.hedges],
            "probes": {"rows": self.probe_rows, "gold": self.gold_means, "gold_total": self.gold_total,
                       "results": [{"probe": p.probe.name, "description": p.probe.description, "means": p.means,
                                    "total": p.total, "failures": p.failures} for p in self.probes]},
        }


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
    first = max([18, *(len(p.probe.name) for p in report.probes)])  # a plugin's probe names may be longer
    lines.append(f"  {'probe':{first}} " + " ".join(f"{n[:width]:>{width}}" for n in names) + f" {'total':>7}")
    lines.append(f"  {'(the gold)':{first}} " + " ".join(f"{report.gold_means[n]:>{width}.2f}" for n in names)
                 + f" {report.gold_total:>7.2f}")
    for p in report.probes:
        mark = "  FAIL" if p.failures else ""
        lines.append(f"  {p.probe.name:{first}} " + " ".join(f"{p.means[n]:>{width}.2f}" for n in names)
                     + f" {p.total:>7.2f}{mark}")
    failed = [p for p in report.probes if p.failures]
    for p in failed:
        lines.append(f"  {p.probe.name} ({p.probe.description}): {'; '.join(p.failures)}")
    lines += [f"  FAIL {_hedge_text(h, report.probe_rows)}" for h in report.hedges]
    if (failed or report.hedges) and not report.answer_layout:
        lines.append("  note: the probes and the gold were written with no answer line: the system prompt is "
                     "text (or names none) and dataset.answer_template is unset. If the prompt asks for an "
                     "answer line, say which, e.g. dataset: {answer_template: \"Answer: {answer}\"}, and the "
                     "check writes them that way.")
    for name, value in report.flat.items():
        lines.append(f"  FAIL {name} gives every completion tried {value:.2f}, the gold included: it gives no "
                     f"learning signal (check its parameters against the system prompt's answer layout)")
    lines += [f"  {'note' if e.ok else 'FAIL'} {e.text()}" for e in report.errors]
    lines.append("\ncheck: " + ("ok" if report.ok else "FAILED (grpo train stops here; --no-check skips it)"))
    return "\n".join(lines)


def _hedge_text(h: HedgePaid, n: int) -> str:
    """Why a reward that reads answers fails on the probes it pays, and what to do."""
    probes = ", ".join(h.probes)
    if h.correctness:
        what = []
        if set(h.probes) - {"unevaluated"}:
            what.append("it pays a hedge like a right answer; make it read the one final answer (math.correctness "
                        "does)")
        if "unevaluated" in h.probes:
            what.append("it pays a sum left to compute like its value, so a model that restates the question "
                        "is paid; make it pay only a computed value (math.correctness does, unless "
                        "allow_expressions=True)")
        return f"{h.name}, a correctness reward, pays {probes} as much as the gold: {'; and '.join(what)}."
    return (f"{h.name} reads the answer (it pays the gold {h.gold:.2f} and a wrong answer written the same way "
            f"{h.wrong:.2f}, above it on {h.rows} of {n} rows) and pays {probes} as much as the gold: declared a "
            f"correctness reward or not, it would teach the model to hedge. Make it read the one final answer; "
            f"or, if it is not meant to judge answers (a topic or mention reward), mark it: "
            f"register(..., reads_answers=False) in its plugin, or reads_answers = False on its function.")


def summary_line(report: CheckReport) -> str:
    gold = ", ".join(f"{g.name} {g.share:.0%}" for g in report.gold if g.correctness) or "no correctness reward"
    failed = "".join(f"; {e.name} failed on {e.failed} of {e.items} completions (scored None, not judged)"
                     for e in report.errors)
    return (f"grpo check{f' [{report.stage}]' if report.stage != 'main' else ''}: ok (gold self-test on "
            f"{report.rows} rows: {gold}; {len(report.probes)} reward-hacking probes pass{failed})")
