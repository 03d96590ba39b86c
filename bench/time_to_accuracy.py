"""Time to accuracy, MLPerf style: held-out accuracy against seconds of training, per arm.

Each cell trains one arm for ``--minutes`` of training wall clock (the quickstart's model and
data; a constant rate after warm-up, so stopping at the budget is fair), keeping the adapter
every ``--every`` steps with the seconds of training it took (saving is not counted). Then
every kept adapter is scored as ``grpo eval`` scores (``--limit`` test prompts, greedy,
math.correctness at full marks). A cell's figures: the seconds until held-out accuracy first
reaches ``--target``, and the accuracy at fixed times (``--at``, minutes: the last adapter
kept by then). Each row records the machine's load average at the start and end of its
training: time figures mean something only on quiet cores, one job at a time.

Arms:

- ``bare``: a bare ``trl.GRPOTrainer`` script (bench/learning.py's), at ``--bare-lr``
  (its best rate there) and the quickstart's other settings (no dynamic sampling);
- ``quickstart``: ``grpo train examples/quickstart.yaml`` as it is (held-out and the check off:
  measured afterwards);
- ``bf16``: the quickstart sampling in bf16 with TRL's correction (``sampling.precision``);
- ``frontier``: the quickstart with ``sampling.prompts: frontier`` in place of its dynamic
  sampling (prompts chosen before generating, not refilled after); ``quickstart+frontier``:
  both;
- any of bench/learning.py's arms on top of the quickstart (``quickstart+zvp-0.1``, ...);
- ``ARM@RATE``: that arm at another learning rate (``frontier@2.5e-4``, ``bare@5e-4``).

Two phases, so the timed one can run alone and the scoring whenever:

    python bench/time_to_accuracy.py train --results bench/results/time-to-accuracy.jsonl \\
        --arms bare quickstart bf16 --seeds 0 1 2 3 4          # one job at a time, on quiet cores
    python bench/time_to_accuracy.py score --results bench/results/time-to-accuracy.jsonl
    python bench/time_to_accuracy.py table --results bench/results/time-to-accuracy.jsonl

``--keep DIR`` holds the runs between the phases (default bench/results/tta-runs, git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

from learning import BARE, DRIVER, GRPO, ROOT, _eval, _number, _run, arm_flags, mean_se

# kept adapters: every EVERY steps, with the seconds of training so far (saves not counted)
SNAP = r'''
import os
EVERY = int(os.environ["TTA_EVERY"])


class Snap(TrainerCallback):
    def on_step_end(self, args, state, control, model=None, **kw):
        if state.global_step % EVERY == 0:
            began = time.time()
            folder = f"{out}/snap-{state.global_step:04d}"
            model.save_pretrained(folder)
            with open(folder + "/when.json", "w") as f:
                json.dump({"step": state.global_step, "seconds": began - Budget.start, "tokens": TOKENS["n"]}, f)
            Budget.start += time.time() - began  # the save is not training


'''


def _with_snaps(script: str) -> str:
    """A learning.py driver script that also keeps the adapter every EVERY steps."""
    return script.replace("[Budget()]", "[Budget(), Snap()]").replace(DRIVER, DRIVER + SNAP, 1)


def train_cell(arm: str, seed: int, opts, env: dict) -> dict:
    out = opts.keep / f"{arm}-{seed}"
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    budget, cap = f"seconds:{opts.minutes * 60:g}", str(opts.max_steps)
    env = dict(env, TTA_EVERY=str(opts.every))
    load0 = os.getloadavg()[0]
    name, _, rate = arm.partition("@")
    if rate and not _number(rate):
        raise SystemExit(f"arm {arm!r}: the rate after '@' must be a number (for example {name}@2.5e-4)")
    if name == "bare":
        result = _run(_with_snaps(BARE), [budget, str(out), str(opts.config), str(seed), cap,
                                          rate or str(opts.bare_lr), "all"], env)
    else:
        parts = name.split("+")
        flags = ["--seed", str(seed), "--heldout.enabled", "false", "--max_steps", cap,
                 "--lr_scheduler_type", "constant_with_warmup"] + (["--learning_rate", rate] if rate else [])
        if parts[0] == "bf16":
            flags += arm_flags("bf16", opts)[:2]  # (sampling.precision only: dynamic sampling as configured)
        elif parts[0] == "frontier":
            flags += arm_flags("frontier", opts)  # (its flags end with --sampling.dynamic false)
        elif parts[0] != "quickstart":
            raise SystemExit(f"unknown arm {arm!r}: bare, quickstart, bf16, frontier, or quickstart+ARM "
                             f"(bench/learning.py's), each optionally @RATE")
        for extra in parts[1:]:
            more = arm_flags(extra, opts)
            flags += more[:-2] if more[-2:] == ["--sampling.dynamic", "false"] else more  # (as configured)
        result = _run(_with_snaps(GRPO), [budget, str(out), str(opts.config), *flags], env)
    snaps = kept(out)
    return {"arm": arm, "seed": seed, "minutes": opts.minutes, "tokens": result["tokens"],
            "steps": len(result["steps"]), "wall": result["wall"], "load_start": load0,
            "load_end": os.getloadavg()[0], "snaps": snaps, "folder": str(out)}


def kept(out: Path) -> list[dict]:
    """The adapters a run kept (each folder's when.json), in step order."""
    return sorted((json.loads(p.read_text()) for p in out.glob("snap-*/when.json")), key=lambda s: s["step"])


def chosen(snaps: list[dict], every: int, at: list[float]) -> set[int]:
    """The steps to score when scoring every adapter would not fit: every ``every``-th kept one
    (by step), the last kept by each of the ``at`` minutes (the table reads those), and the last."""
    if not snaps:
        return set()
    steps = {s["step"] for i, s in enumerate(snaps) if (i + 1) % every == 0} | {snaps[-1]["step"]}
    for minutes in at:
        by_then = [s["step"] for s in snaps if s["seconds"] <= minutes * 60]
        steps |= set(by_then[-1:])
    return steps


def score_cell(row: dict, opts, env: dict, base: float | None) -> dict:
    """Each chosen adapter's held-out accuracy (the base model's too, once: at 0 s)."""
    scored, wanted = [], chosen(row["snaps"], opts.score_every, opts.at)
    for snap in row["snaps"]:
        if ("accuracy" in snap and snap.get("prompts") == opts.limit) or snap["step"] not in wanted:
            scored.append(snap)
            continue
        folder = Path(row["folder"]) / f"snap-{snap['step']:04d}"
        acc = _eval(opts.config, folder, [], env, opts.limit, base is None)
        base = acc["base"] if base is None else base
        scored.append({**snap, "accuracy": acc["trained"], "prompts": opts.limit})
        print(f"  {row['arm']} seed {row['seed']} step {snap['step']} ({snap['seconds']:.0f} s): "
              f"{acc['trained']:.3f}", flush=True)
    return {**row, "snaps": scored, "base": base, "prompts": opts.limit}


def reached(row: dict, target: float) -> float | None:
    """Seconds of training until held-out accuracy first reached ``target`` (None: never)."""
    return next((s["seconds"] for s in row["snaps"] if s.get("accuracy", -1) >= target), None)


def accuracy_at(row: dict, minutes: float) -> float | None:
    """Held-out accuracy of the last adapter kept by ``minutes`` of training (the base model's
    before the first)."""
    kept = [s for s in row["snaps"] if s["seconds"] <= minutes * 60 and "accuracy" in s]
    return kept[-1]["accuracy"] if kept else row.get("base")


def table(rows: list[dict], opts) -> str:
    lines = [f"target {opts.target} on {opts.limit} held-out prompts; accuracy at "
             + ", ".join(f"{m:g}" for m in opts.at) + " min of training"]
    head = f"{'arm':22} {'seed':>4} {'to target s':>11} " + " ".join(f"{f'@{m:g}m':>6}" for m in opts.at) \
        + f" {'steps':>5} {'tokens':>6} {'load':>9}"
    lines += [head, "-" * len(head)]
    by_arm: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: (r["arm"], r["seed"])):
        by_arm.setdefault(r["arm"], []).append(r)
        t = reached(r, opts.target)
        ats = " ".join(f"{a:6.3f}" if (a := accuracy_at(r, m)) is not None else f"{'-':>6}" for m in opts.at)
        lines.append(f"{r['arm']:22} {r['seed']:>4} {'-' if t is None else round(t):>11} {ats} {r['steps']:>5} "
                     f"{r['tokens']:>6} {r['load_start']:4.1f}-{r['load_end']:<4.1f}")
    lines.append("")
    for arm, rs in by_arm.items():
        times = [reached(r, opts.target) for r in rs]
        hit = [t for t in times if t is not None]
        text = f"{arm:22} reached {opts.target} in {len(hit)}/{len(rs)} seeds"
        if hit:
            m, se = mean_se(hit)
            text += f"; seconds to it, seeds that reached it: {m:.0f} ± {se:.0f}"
        for minutes in opts.at:
            accs = [a for r in rs if (a := accuracy_at(r, minutes)) is not None]
            if accs:
                m, se = mean_se(accs)
                text += f"; @{minutes:g}m {m:.3f} ± {se:.3f}"
        lines.append(text)
    base = by_arm.get(opts.baseline)
    if base:
        lines += [""] + [against(arm, rs, base, opts) for arm, rs in by_arm.items() if arm != opts.baseline]
    return "\n".join(lines)


def against(arm: str, rows: list[dict], base: list[dict], opts) -> str:
    """``arm`` against the baseline arm, paired by seed: the difference in accuracy at each fixed
    time, and how many times sooner it reached the target (the baseline's seconds over the arm's,
    over the seeds where both reached it)."""
    theirs = {r["seed"]: r for r in base}
    pairs = [(r, theirs[r["seed"]]) for r in rows if r["seed"] in theirs]
    text = f"{arm} - {opts.baseline}, paired over {len(pairs)} seeds:"
    for minutes in opts.at:
        diffs = [a - b for r, o in pairs
                 if (a := accuracy_at(r, minutes)) is not None and (b := accuracy_at(o, minutes)) is not None]
        if diffs:
            m, se = mean_se(diffs)
            text += f" @{minutes:g}m {m:+.3f} ± {se:.3f};"
    both = [(reached(r, opts.target), reached(o, opts.target)) for r, o in pairs]
    ratios = [b / a for a, b in both if a is not None and b is not None and a > 0]
    if ratios:
        m, se = mean_se(ratios)
        text += f" {opts.baseline}'s seconds to {opts.target} / {arm}'s {m:.2f} ± {se:.2f} ({len(ratios)} seeds)"
    else:
        text += f" no seed where both reached {opts.target}"
    only = sum(a is not None and b is None for a, b in both), sum(a is None and b is not None for a, b in both)
    return text + f"; reached it alone: {arm} on {only[0]} seeds, {opts.baseline} on {only[1]}"


def read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=("train", "score", "table"))
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "quickstart.yaml")
    parser.add_argument("--arms", nargs="+", default=["bare", "quickstart", "bf16"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--minutes", type=float, default=4.5, help="minutes of training per run")
    parser.add_argument("--every", type=int, default=2, help="keep the adapter every this many steps")
    parser.add_argument("--max-steps", type=int, default=100, help="a cap; the minutes stop runs first")
    parser.add_argument("--bare-lr", type=float, default=2.5e-4, help="bare TRL's rate (its best in bench/learning.py)")
    parser.add_argument("--limit", type=int, default=64, help="held-out prompts per score")
    parser.add_argument("--target", type=float, default=0.5)
    parser.add_argument("--baseline", default="bare", help="the arm the others are paired against by seed")
    parser.add_argument("--at", type=float, nargs="+", default=[2, 3, 4.5], help="minutes to read accuracy at")
    parser.add_argument("--keep", type=Path, default=ROOT / "bench" / "results" / "tta-runs")
    parser.add_argument("--score-every", type=int, default=1,
                        help="score every Nth kept adapter (and those the table reads, and the last): "
                             "seconds to the target are then read at that grain")
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--metric", default="math.correctness")
    opts = parser.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error")
    rows = read(opts.results)
    if opts.phase == "train":
        opts.keep.mkdir(parents=True, exist_ok=True)
        for seed in opts.seeds:
            for arm in opts.arms:
                if any((r["arm"], r["seed"], r["minutes"]) == (arm, seed, opts.minutes) for r in rows):
                    continue
                t0 = time.time()
                row = train_cell(arm, seed, opts, env)
                rows.append(row)
                write(opts.results, rows)
                print(f"{arm} seed {seed}: {row['steps']} steps, {len(row['snaps'])} kept, load "
                      f"{row['load_start']:.1f}-{row['load_end']:.1f} ({time.time() - t0:.0f} s)", flush=True)
    elif opts.phase == "score":
        base = next((r["base"] for r in rows if r.get("prompts") == opts.limit and r.get("base") is not None), None)
        for i, row in enumerate(rows):
            rows[i] = score_cell(row, opts, env, base)
            base = rows[i]["base"]
            write(opts.results, rows)
    if opts.phase != "train":
        print(table([r for r in rows if r.get("prompts") == opts.limit], opts))


if __name__ == "__main__":
    main()
