"""The view's curves, drawn by matplotlib (grpo's plotting library: ``rewards.png``) as SVG
from ``metrics.jsonl``: rewards, held-out accuracy, what the generated tokens bought, the
learning signal. One run, or two overlaid. Drawn once per version of the file."""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

from grpo_core.run.plotting import series

_LOCK = threading.Lock()  # matplotlib's state (rcParams, font cache) is shared
POINTS = 400  # points per line at most


@dataclass(frozen=True)
class Chart:
    key: str  # its id on the page
    title: str
    svg: str


# (key, title, y label, [(metric, label)]), in the page's order
PANELS = (
    ("rewards", "Rewards", "reward (mean)", [("reward", "total")]),  # and each reward's mean
    ("accuracy", "Held-out accuracy", "accuracy", [("eval/accuracy", "held-out accuracy")]),
    ("tokens", "What the generated tokens bought", "share of tokens", [
        ("tokens/teaching_share", "teaching share (batch)"), ("tokens/teaching_share_total", "teaching share (run)")]),
    ("generated", "Generated completion tokens", "tokens per batch", [("tokens/generated", "generated")]),
    ("signal", "Learning signal", "share", [("frac_reward_zero_std", "groups with zero spread"),
                                            ("sampling/flat_share_trained", "flat share trained (dynamic)")]),
)


def _reward_names(rows: list[dict]) -> list[str]:
    names: list[str] = []
    for r in rows[:50]:
        for k in r:
            if k.startswith("rewards/") and k.endswith("/mean") and k[8:-5] not in names:
                names.append(k[8:-5])
    return names


def charts(runs: list[tuple[str, list[dict]]]) -> list[Chart]:
    """The panels that have data in at least one run; ``runs``: (label, metrics rows)."""
    out = []
    for key, title, ylabel, metrics in PANELS:
        lines = []
        for label, rows in runs:
            wanted = list(metrics)
            if key == "rewards" and len(runs) == 1:
                wanted += [(f"rewards/{n}/mean", n) for n in _reward_names(rows)]
            for metric, name in wanted:
                xs, ys = series(rows, metric)
                if xs:
                    lines.append((f"{label}: {name}" if len(runs) > 1 else name, xs, ys))
        if lines:
            out.append(Chart(key, title, _svg(title, ylabel, lines)))
    return out


def thin(xs: list, ys: list, most: int = POINTS) -> tuple[list, list]:
    """At most ``most`` points: the mean of each run of consecutive steps (a chart 460 pixels
    wide shows no more; the trend is kept, single-step noise averaged)."""
    n = len(xs)
    if n <= most:
        return xs, ys
    size = n / most
    outx, outy = [], []
    for k in range(most):
        lo, hi = round(k * size), round((k + 1) * size)
        if hi > lo:
            outx.append(sum(xs[lo:hi]) / (hi - lo))
            outy.append(sum(ys[lo:hi]) / (hi - lo))
    return outx, outy


def _svg(title: str, ylabel: str, lines: list[tuple[str, list, list]]) -> str:
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    with _LOCK, matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": title}):
        fig = Figure(figsize=(6.4, 2.9), dpi=72)
        fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.16)
        ax = fig.add_subplot()
        for label, xs, ys in lines:
            many = len(xs) > POINTS
            xs, ys = thin(xs, ys)
            ax.plot(xs, ys, lw=1.3, label=label + (" (means of runs of steps)" if many else ""),
                    marker="o" if len(xs) < 30 else None, ms=3)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # no XML prolog inside HTML


__all__ = ["Chart", "charts", "thin", "PANELS", "POINTS"]
