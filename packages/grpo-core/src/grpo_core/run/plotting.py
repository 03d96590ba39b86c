"""``rewards.png``: the picture a user looks at first after ``grpo train``.

Top: total reward (mean with a ±std band) and each reward's mean with its std
band, over global steps, with stage boundaries. Bottom: KL to the reference
(only logged by TRL when ``beta > 0``) and the share of zero-spread groups.
"""

from __future__ import annotations

import json
import math
from pathlib import Path


def read_metrics(path: str | Path) -> list[dict]:
    """Training log records (those with a ``reward``) from ``metrics.jsonl``."""
    rows: list[dict] = []
    p = Path(path)
    if not p.is_file():
        return rows
    for line in p.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        if "reward" in rec:
            rows.append(rec)
    return rows


def series(rows: list[dict], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of ``key`` where it is a finite number."""
    xs, ys = [], []
    for r in rows:
        v = r.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            xs.append(r["step"])
            ys.append(float(v))
    return xs, ys


def plot_rewards(metrics_path: str | Path, out_path: str | Path, title: str | None = None) -> Path | None:
    """Write the reward plot; ``None`` when there is nothing to plot yet."""
    rows = read_metrics(metrics_path)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1.4]})
    _plot_rewards_panel(ax, rows, plt.rcParams["axes.prop_cycle"].by_key()["color"], title)
    _plot_health_panel(ax2, rows)
    fig.tight_layout()
    out = Path(out_path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out



def _reward_names(rows: list[dict]) -> list[str]:
    """Each reward's logged name, in the order they first appear."""
    names: list[str] = []
    for r in rows:
        for k in r:
            if k.startswith("rewards/") and k.endswith("/mean"):
                n = k[len("rewards/"):-len("/mean")]
                if n not in names:
                    names.append(n)
    return names


def _plot_rewards_panel(ax, rows: list[dict], colors: list, title: str | None) -> None:
    """The total and each reward (mean ± std), a moving mean, held-out accuracy."""
    names = _reward_names(rows)
    xs, mean = series(rows, "reward")
    _, std = series(rows, "reward_std")
    ax.plot(xs, mean, color="black", lw=1.6, label="total (weighted)", marker="o" if len(xs) < 40 else None, ms=3)
    if len(std) == len(mean):
        ax.fill_between(xs, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                        color="black", alpha=0.10)
    window = max(3, len(xs) // 8)
    if len(xs) >= 2 * window:
        smooth = [sum(mean[max(0, i - window + 1):i + 1]) / len(mean[max(0, i - window + 1):i + 1])
                  for i in range(len(mean))]
        ax.plot(xs, smooth, color="black", lw=2.6, alpha=0.55, ls="--", label=f"total, {window}-step mean")
    for i, name in enumerate(names):
        x, m = series(rows, f"rewards/{name}/mean")
        x2, s = series(rows, f"rewards/{name}/std")
        c = colors[i % len(colors)]
        ax.plot(x, m, color=c, lw=1.4, label=name)
        if x2 == x:
            ax.fill_between(x, [a - b for a, b in zip(m, s)], [a + b for a, b in zip(m, s)], color=c, alpha=0.08)
    ex, acc = series(rows, "eval/accuracy")
    if acc:  # held-out accuracy next to the training rewards (the correctness reward among them)
        ax.plot(ex, acc, color="tab:green", lw=2.0, ls="-.", marker="s", ms=4, label="held-out accuracy")
    _stage_lines(ax, rows)
    ax.set_ylabel("reward (mean ± std)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title or "GRPO rewards")


def _plot_health_panel(ax2, rows: list[dict]) -> None:
    """KL to the reference and the share of zero-std groups."""
    kx, kl = series(rows, "kl")
    zx, zs = series(rows, "frac_reward_zero_std")
    if kl:
        ax2.plot(kx, kl, color="tab:red", lw=1.4, label="KL to reference")
        ax2.set_ylabel("KL")
    else:
        ax2.text(0.01, 0.92, "KL not logged (beta = 0: TRL computes no reference KL)",
                 transform=ax2.transAxes, fontsize=8, va="top", color="tab:red")
        ax2.set_ylabel("KL")
    if zs:
        twin = ax2.twinx()
        twin.plot(zx, zs, color="tab:gray", lw=1, ls="--", label="frac_reward_zero_std")
        twin.set_ylim(-0.05, 1.05)
        twin.set_ylabel("zero-std groups", fontsize=8)
        twin.legend(loc="upper right", fontsize=7)
    if kl:
        ax2.legend(loc="upper left", fontsize=7)
    _stage_lines(ax2, rows)
    ax2.set_xlabel("step")
    from matplotlib.ticker import MaxNLocator

    ax2.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax2.grid(alpha=0.3)

def _stage_lines(ax, rows: list[dict]) -> None:
    prev = None
    for r in rows:
        stage = r.get("stage")
        if prev is not None and stage != prev:
            ax.axvline(r["step"] - 0.5, color="tab:purple", ls=":", lw=1)
            ax.text(r["step"] - 0.4, 0.98, stage, transform=ax.get_xaxis_transform(), fontsize=7,
                    va="top", color="tab:purple")
        prev = stage


__all__ = ["plot_rewards", "read_metrics", "series"]
