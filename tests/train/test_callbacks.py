"""Health monitor, adaptive reward weights, console line and reward plot, with
values computed by hand; adaptive weights also inside a real training step."""

from __future__ import annotations

import json
import math

import pytest
from transformers import TrainerCallback

from grpo_core.config.schema import AdaptiveSection, HealthSection
from grpo_core.run import callbacks
from grpo_core.run.callbacks import summary_line

from .conftest import TINY


@pytest.fixture(scope="module")
def cb():
    """The callback classes by name."""
    return {name: getattr(callbacks, name) for name in callbacks.__all__}


def health(cb, tmp_path, **kw):
    warned = []
    h = cb["HealthCallback"](HealthSection(**kw), tmp_path / "health.jsonl", warn=warned.append)
    return h, warned


def test_no_signal_warns_once_after_the_window(cb, tmp_path):
    h, warned = health(cb, tmp_path, window=3, zero_std_frac=0.9, flat_window=0)
    for step, z in enumerate([1.0, 0.95, 0.9, 1.0, 1.0], start=1):
        h.check(step, {"reward": 0.0, "reward_std": 0.1, "frac_reward_zero_std": z})
    assert len(warned) == 1 and warned[0].startswith("step 3:")  # steps 1-3 all >= 0.9
    events = [json.loads(x) for x in (tmp_path / "health.jsonl").read_text().splitlines()]
    assert [(e["step"], e["check"]) for e in events] == [(3, "no_signal")]
    h.check(6, {"reward": 0.0, "reward_std": 0.1, "frac_reward_zero_std": 0.5})  # clears
    for step in (7, 8, 9):
        h.check(step, {"reward": 0.0, "reward_std": 0.1, "frac_reward_zero_std": 1.0})
    assert len(warned) == 2 and warned[1].startswith("step 9:")


def test_collapse_kl_and_flat_reward(cb, tmp_path):
    h, warned = health(cb, tmp_path, window=2, min_reward_std=1e-3, max_kl=0.5, flat_window=3, flat_delta=0.02)
    h.check(1, {"reward": 0.50, "reward_std": 0.0, "kl": 1.1})
    h.check(2, {"reward": 0.51, "reward_std": 0.0005, "kl": 0.1})
    h.check(3, {"reward": 0.505, "reward_std": 0.2, "kl": 0.95})
    # step 2: collapse (two stds <= 1e-3) and kl (mean of 1.1 and 0.1 is 0.6 > 0.5);
    # step 3: flat (0.50..0.51, a spread of 0.01 < 0.02 over 3 steps)
    assert [(e["step"], e["check"]) for e in h.events] == [(2, "collapse"), (2, "kl"), (3, "flat")]
    assert h.events[1]["value"] == pytest.approx(0.6)  # KL is averaged over the window


def test_a_single_kl_spike_does_not_warn(cb, tmp_path):
    h, warned = health(cb, tmp_path, window=3, max_kl=0.5, flat_window=0)
    for step, kl in enumerate([0.1, 1.2, 0.1, 0.1], start=1):  # window means 0.47, 0.47
        h.check(step, {"reward": 0.0, "reward_std": 0.1, "kl": kl})
    assert warned == []


def test_a_sampler_drifting_from_the_trainer_warns_with_what_to_do(cb, tmp_path):
    """sampling.precision below the trainer's: sampling/kl (nat a token) averaged over the
    window above health.max_sampler_kl."""
    h, warned = health(cb, tmp_path, window=2, max_sampler_kl=0.02, flat_window=0)
    for step, kl in enumerate([0.001, 0.03, 0.02, 0.05], start=1):  # window means 0.0155, 0.025, 0.035
        h.check(step, {"reward": 0.0, "reward_std": 0.1, "sampling/kl": kl})
    assert [(e["step"], e["check"]) for e in h.events] == [(3, "sampler_kl")]  # reported once while it lasts
    assert h.events[0]["value"] == pytest.approx(0.025)
    assert "sampling.precision: float32" in warned[0] and "0.0250" in warned[0]
    h.check(5, {"reward": 0.0, "reward_std": 0.1, "sampling/kl": 0.0})  # mean 0.025: still over
    h.check(6, {"reward": 0.0, "reward_std": 0.1, "sampling/kl": 0.0})  # mean 0.0: cleared
    h.check(7, {"reward": 0.0, "reward_std": 0.1, "sampling/kl": 0.1})
    assert [e["step"] for e in h.events] == [3, 7]
    assert "sampler kl 0.0010" in summary_line(1, 4, {"reward": 0.1, "sampling/kl": 0.001})


def test_adaptive_weights_rule(cb):
    a = cb["AdaptiveWeightsCallback"](AdaptiveSection(target=0.5, rate=1.0, min_factor=0.5, max_factor=2.0),
                                      ["a", "b", "c"], [1.0, 2.0, 1.0])
    w = a.update([0.0, 1.0, None])  # a: rarely succeeds -> up; b: always -> down; c: no data
    assert w[0] == pytest.approx(1.0 * math.exp(0.5))
    assert w[1] == pytest.approx(2.0 * math.exp(-0.5))
    assert w[2] == 1.0
    w = a.update([0.0, 1.0, 0.5])
    assert w[0] == pytest.approx(2.0)  # capped at max_factor * 1.0 (exp(1) > 2)
    assert w[1] == pytest.approx(1.0)  # floored at min_factor * 2.0
    assert w[2] == 1.0  # at the target: unchanged


def first_of_four(completions, **kwargs):
    """1.0 for the first completion of each group of 4, else 0.0: a success rate of 1/4."""
    return [1.0 if i % 4 == 0 else 0.0 for i in range(len(completions))]


def always(completions, **kwargs):
    """1.0 for every completion: a success rate of 1."""
    return [1.0 for _ in completions]


@pytest.fixture
def fixed_rates(register_plugin):
    """Rewards whose success rates are known whatever the model writes."""
    import types

    import grpo_core

    mod = types.ModuleType("fixed_rates")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("fixed.quarter", first_of_four)
        register("fixed.all", always)

    mod.register_rewards = register_rewards
    register_plugin(mod)


class TrlWeights(TrainerCallback):
    """Reads ``reward_weights`` of the trainer it is bound to (the tensor TRL multiplies
    each reward column by) at the end of every step. GrpoTrainer binds every callback
    that has ``bind``, ours after the adaptive one."""

    def __init__(self):
        self.trainer, self.after = None, {}

    def bind(self, trainer) -> None:
        self.trainer = trainer

    def on_step_end(self, args, state, control, **kw):
        self.after[state.global_step] = self.trainer.reward_weights.tolist()


def test_adaptive_weights_set_the_weights_trl_multiplies_rewards_by(train, fixed_rates, tmp_path):
    trl_weights = TrlWeights()
    cfg = tmp_path / "a.yaml"
    cfg.write_text(TINY.read_text() + "adaptive_weights: {target: 0.5, rate: 1.0, threshold: 0.5, max_factor: 2.0}\n")
    result, lines = train("--max_steps", "4", "--rewards", "fixed.quarter:1.0", "fixed.all:0.5", config=cfg,
                          callbacks=[trl_weights], check=False)
    assert result.exit_code == 0, lines
    # success rates every step: quarter 1/4, all 1. factor <- clamp(factor * exp(1.0 * (0.5 - rate)), 0.25, 2.0)
    # quarter (base 1.0): e^0.25 = 1.284025, e^0.5 = 1.648721, e^0.75 = 2.117 -> 2.0, 2.0 * e^0.25 -> 2.0
    # all (base 0.5):     0.5 * e^-0.5 = 0.303265, 0.5 * e^-1 = 0.183940, e^-1.5 = 0.223 -> 0.25: 0.125, stays
    expected = {1: [1.2840254, 0.3032653], 2: [1.6487213, 0.1839397], 3: [2.0, 0.125], 4: [2.0, 0.125]}
    assert trl_weights.after.keys() == expected.keys()
    for step, weights in expected.items():
        assert trl_weights.after[step] == pytest.approx(weights, rel=1e-6), step  # float32 tensor
    # TRL's logged reward is the mean weighted sum, with the weights the step before left:
    # step 1: 1.0 * 0.25 + 0.5 * 1 = 0.75; step 2: 1.2840254 * 0.25 + 0.3032653 = 0.6242717;
    # step 3: 1.6487213 * 0.25 + 0.1839397 = 0.5961200; step 4: 2.0 * 0.25 + 0.125 = 0.625
    steps = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "reward" in r]
    assert [r["reward"] for r in steps] == pytest.approx([0.75, 0.6242717, 0.5961200, 0.625], rel=1e-6)
    assert [r["weights/fixed.quarter"] for r in steps] == pytest.approx([1.2840254, 1.6487213, 2.0, 2.0], rel=1e-6)
    assert [r["success/fixed.quarter"] for r in steps] == [0.25] * 4


def test_adaptive_weights_move_once_per_generation_batch(train, fixed_rates, tmp_path):
    """With steps_per_generation 2 one batch trains two steps: the weights move once per batch,
    not once per step on the same success rates."""
    trl_weights = TrlWeights()
    cfg = tmp_path / "a.yaml"
    cfg.write_text(TINY.read_text() + "adaptive_weights: {target: 0.5, rate: 1.0, threshold: 0.5, max_factor: 2.0}\n")
    result, lines = train("--max_steps", "4", "--steps_per_generation", "2", "--rewards", "fixed.quarter:1.0",
                          "fixed.all:0.5", config=cfg, callbacks=[trl_weights], check=False)
    assert result.exit_code == 0, lines
    # batches at steps 1 and 3: quarter 1.0 -> e^0.25 (steps 1, 2) -> e^0.5 (steps 3, 4)
    assert [trl_weights.after[s][0] for s in (1, 2, 3, 4)] == pytest.approx(
        [1.2840254, 1.2840254, 1.6487213, 1.6487213], rel=1e-6)


def test_summary_line():
    logs = {"reward": 0.4123, "reward_std": 0.2311, "rewards/math.correctness/mean": 0.25,
            "rewards/format.x/mean": None, "frac_reward_zero_std": 0.25, "kl": 0.0012,
            "completions/mean_length": 41.2}
    assert summary_line(3, 30, logs, elapsed=12.34) == (
        "step 3/30 | reward 0.412 ± 0.231 | math.correctness 0.250  format.x n/a | "
        "zero-std 0.25 | kl 0.0012 | len 41 | 12.3s"
    )


def test_plot_draws_rewards_std_bands_and_stage_boundaries(tmp_path):
    from grpo_core.run.plotting import plot_rewards

    rows = []
    for step in range(1, 7):
        stage = "format" if step <= 3 else "answer"
        name = "a.fmt" if stage == "format" else "a.ans"
        rows.append({"step": step, "stage": stage, "reward": step / 10, "reward_std": 0.1,
                     f"rewards/{name}/mean": step / 10, f"rewards/{name}/std": 0.05,
                     "kl": 0.01 * step, "frac_reward_zero_std": 0.5})
    rows.append({"step": 6, "train_runtime": 1.0})  # non-step records are ignored
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 7, "rew')  # a cut line
    out = plot_rewards(metrics, tmp_path / "rewards.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert plot_rewards(tmp_path / "missing.jsonl", tmp_path / "x.png") is None
