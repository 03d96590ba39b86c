"""The console's step line of ``grpo train``: ``step 3/30 | reward 0.41 ± 0.23 | ...``,
each figure read from one step's logs (the rewards, held-out accuracy, KL, lengths, a prompt
sampler's figures, a judge's tokens, a slow reward), and the clock (elapsed, ETA). Plain
text from a dict: no transformers (``run/callbacks.py``'s ``MetricsCallback`` prints it)."""

from __future__ import annotations

from grpo_core.runfiles.rollouts import (
    finite_or_none as finite,  # a figure as a float, None where not finite
)


def reward_names(logs: dict) -> list[str]:
    return [k[len("rewards/"):-len("/mean")] for k in logs if k.startswith("rewards/") and k.endswith("/mean")]


# the step line's single figures after the rewards: (metric, label, format)
LINE_FIGURES = (("eval/accuracy", "held-out accuracy", ".2f"), ("frac_reward_zero_std", "zero-std", ".2f"),
                ("kl", "kl", ".4f"), ("completions/mean_length", "len", ".0f"),
                ("tokens/teaching_share", "tokens teaching", ".0%"), ("sampling/kl", "sampler kl", ".4f"))


def summary_line(step: int, max_steps: int, logs: dict, stage: str | None = None, elapsed: float | None = None,
                 clock: str | None = None) -> str:
    """``step 3/30 | reward 0.41 ± 0.23 | math.correctness 0.25  format 0.62 | zero-std 0.25 | kl 0.001 | len 41 |
    12.3s | 0:37 elapsed, ETA 5:32``; a reward that took over a quarter of the step is named."""
    parts = [f"step {step}/{max_steps}" + (f" [{stage}]" if stage else "")]
    r, s = finite(logs.get("reward")), finite(logs.get("reward_std"))
    if r is not None:
        parts.append(f"reward {r:.3f}" + (f" ± {s:.3f}" if s is not None else ""))
    per = []
    for name in reward_names(logs):
        v = finite(logs.get(f"rewards/{name}/mean"))
        per.append(f"{name} {'n/a' if v is None else f'{v:.3f}'}")
    if per:
        parts.append("  ".join(per))
    for key, label, fmt in LINE_FIGURES:
        value = finite(logs.get(key))
        if value is not None:
            parts.append(f"{label} {value:{fmt}}")
    parts += prompt_figures(logs)
    for name in reward_names(logs):  # a reward that pays for tokens (a judge) logs <name>/tokens: spent per call
        tokens, sec = finite(logs.get(f"{name}/tokens")), finite(logs.get(f"rewards/{name}/seconds"))
        if tokens is not None:
            parts.append(f"{name} {tokens:,.0f} tokens" + (f" {sec:.1f}s" if sec is not None else ""))
    if elapsed is not None:
        parts.append(f"{elapsed:.1f}s")
        slow = [f"{name} {sec:.1f}s" for name in reward_names(logs)
                for sec in [finite(logs.get(f"rewards/{name}/seconds"))] if sec is not None and sec > elapsed / 4]
        if slow:
            parts.append("slow reward: " + ", ".join(slow))
    if clock:
        parts.append(clock)
    return " | ".join(parts)


def prompt_figures(logs: dict) -> list[str]:
    """A prompt sampler's figures (``sampling.prompts``, logged as ``prompts/...``):
    ``difficulty 1.76 | pass expected 0.50 observed 0.62 | flat 0.25`` (flat: groups all
    right or all wrong on the correctness reward)."""
    d, e, o, f = (finite(logs.get(f"prompts/{k}")) for k in ("difficulty", "expected_pass", "observed_pass",
                                                               "flat_share"))
    out = [f"difficulty {d:.2f}"] if d is not None else []
    if e is not None or o is not None:
        out.append("pass" + (f" expected {e:.2f}" if e is not None else "") + (f" observed {o:.2f}" if o is not None
                                                                               else ""))
    return out + ([f"flat {f:.2f}"] if f is not None else [])


def clock_text(elapsed: float, done: int, left: int, first: tuple[int, float] | None = None) -> str:
    """``1:05 elapsed, ETA 3:10``: the time left at the mean step time so far. ``first``,
    the (steps, seconds) of the first line printed, is left out once there are later
    ones: the first steps also compile the decoding, warm up and run the first held-out
    evaluation (on an H200, 189 s against 1-2 s for the later steps, which made step 2
    say ETA 1:32:03 where 88 s were left)."""
    text = f"{_hms(elapsed)} elapsed"
    if done > 0 and left > 0:
        if first is not None and done > first[0]:
            per_step = (elapsed - first[1]) / (done - first[0])
        else:
            per_step = elapsed / done
        text += f", ETA {_hms(per_step * left)}"
    return text


def _hms(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


__all__ = ["summary_line", "clock_text", "prompt_figures", "reward_names", "finite", "LINE_FIGURES"]
