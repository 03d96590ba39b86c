"""Non-finite values stop a run cleanly: the update that carries them is dropped,
a checkpoint of the last finite state is saved, health.jsonl says what happened,
and --resume continues from it. ``skip`` drops such updates and goes on."""

from __future__ import annotations

import json
import math

import pytest
import torch

from grpo_core.trainer.nonfinite import Guard, wants_snapshot

from .conftest import TINY


def step_records(path):
    return [r for r in map(json.loads, path.read_text().splitlines()) if "reward" in r]


def health_records(path):
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("check") == "nonfinite"]


class NanGrad(torch.autograd.Function):
    """Identity forward (the loss stays finite), NaN gradient backward."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * math.nan


@pytest.fixture
def nan_grad_at(monkeypatch):
    """``nan_grad_at(steps)``: the gradients of those optimizer steps (1-based) are NaN."""
    from trl import GRPOTrainer

    original = GRPOTrainer.compute_loss

    def arm(steps):
        def compute_loss(self, model, inputs, *args, **kwargs):
            loss = original(self, model, inputs, *args, **kwargs)
            return NanGrad.apply(loss) if self.state.global_step + 1 in steps else loss

        monkeypatch.setattr(GRPOTrainer, "compute_loss", compute_loss)

    return arm


def adapter_weights(checkpoint):
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "adapter_model.safetensors"))


def test_nan_gradient_stops_with_a_resumable_checkpoint_of_the_last_finite_state(grpo, nan_grad_at, tmp_path):
    nan_grad_at({3})
    args = (TINY, "--max_steps", "4", "--save_strategy", "steps", "--save_steps", "2")
    code, out, err = grpo(*args)
    text = out + err
    assert code == 1, text
    assert "step 3: the gradient norm is nan (learning rate" in text
    # LoRA on all 7 linear layers of each of the tiny model's 2 layers, A and B: 28 tensors; the NaN came
    # from the loss, so it reached all of them, the first attention's q_proj to the last MLP's down_proj
    assert ("non-finite gradients in 28 of 28 trainable tensors, from base_model.model.model.layers.0.self_attn."
            "q_proj.lora_A.default.weight to base_model.model.model.layers.1.mlp.down_proj.lora_B.default.weight"
            in text)
    assert "lower learning_rate (now 0.001)" in text and "--resume" in text
    run = tmp_path / "out"
    # step 3's update was dropped: checkpoint-3 holds exactly the weights of checkpoint-2
    two, three = adapter_weights(run / "checkpoint-2"), adapter_weights(run / "checkpoint-3")
    assert two.keys() == three.keys()
    assert all(torch.equal(two[k], three[k]) for k in two)
    assert all(torch.isfinite(v).all() for v in three.values())
    [event] = health_records(run / "health.jsonl")
    assert (event["step"], event["metric"], event["value"], event["restored"]) == (3, "grad_norm", None, False)
    assert event["learning_rate"] > 0
    assert not (run / "adapter").exists()  # no final adapter from a stopped run

    nan_grad_at(set())
    code, out, err = grpo(*args, "--resume")
    assert code == 0, out + err
    assert [line.split()[1] for line in out.splitlines() if line.startswith("step ")] == ["4/4"]
    assert (run / "adapter" / "adapter_model.safetensors").is_file()


@pytest.mark.parametrize("max_grad_norm", ["1.0", "0"])  # clipped, or the norm taken by an infinite bound
def test_a_nan_made_inside_one_layer_is_located_there(grpo, monkeypatch, tmp_path, max_grad_norm):
    """The NaN enters the backward at the output of layer 1's attention (clipped with
    max_grad_norm 1.0 as TRL does): layer 1's MLP adapters, reached before it, keep finite
    gradients; its attention's 4 and all 14 of layer 0 do not: 22 of 28, the last named
    being layer 1's o_proj, where it started."""
    from trl import GRPOTrainer

    original = GRPOTrainer.compute_loss

    def compute_loss(self, model, inputs, *args, **kwargs):
        if self.state.global_step + 1 != 2:
            return original(self, model, inputs, *args, **kwargs)
        attention = next(m for n, m in model.named_modules() if n.endswith("layers.1.self_attn"))
        hook = attention.register_forward_hook(lambda mod, args, out: (NanGrad.apply(out[0]), *out[1:]))
        try:
            return original(self, model, inputs, *args, **kwargs)
        finally:
            hook.remove()

    monkeypatch.setattr(GRPOTrainer, "compute_loss", compute_loss)
    code, out, err = grpo(TINY, "--max_steps", "2", "--max_grad_norm", max_grad_norm)
    assert code == 1, out + err
    assert ("step 2: the gradient norm is nan (learning rate 0.0005); non-finite gradients in 22 of 28 trainable "
            "tensors, from base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight to "
            "base_model.model.model.layers.1.self_attn.o_proj.lora_B.default.weight" in out + err)


def test_skip_drops_the_update_and_goes_on(grpo, nan_grad_at, tmp_path):
    nan_grad_at({2})
    code, out, err = grpo(TINY, "--max_steps", "3", "--health.on_nonfinite", "skip")
    assert code == 0, out + err
    assert "step 2: the gradient norm is nan" in out + err and "update dropped, going on" in out + err
    run = tmp_path / "out"
    assert [r["step"] for r in step_records(run / "metrics.jsonl")] == [1, 2, 3]
    assert [e["step"] for e in health_records(run / "health.jsonl")] == [2]
    assert (run / "adapter" / "adapter_model.safetensors").is_file()


def test_skip_stops_after_max_skips_in_a_row(grpo, nan_grad_at, tmp_path):
    nan_grad_at({2, 3, 4})
    code, out, err = grpo(TINY, "--max_steps", "5", "--health.on_nonfinite", "skip", "--health.max_skips", "2")
    assert code == 1, out + err
    assert "Training stopped: step 3" in out + err
    assert [e["step"] for e in health_records(tmp_path / "out" / "health.jsonl")] == [2, 3]


def test_an_absurd_learning_rate_is_caught_in_the_weights_and_undone(grpo, tmp_path):
    # Adam moves each weight by about the learning rate: 1e39 overflows float32 to inf.
    # (The tiny model's adapters are over 10 % of it, so the snapshot is asked for.)
    code, out, err = grpo(TINY, "--max_steps", "3", "--learning_rate", "1e39", "--lr_scheduler_type", "constant",
                          "--health.snapshot", "true")
    text = out + err
    assert code == 1, text
    assert "step 1: the trainable weights after the update are non-finite" in text
    assert "restored" in text
    ckpt = tmp_path / "out" / "checkpoint-1"
    weights = adapter_weights(ckpt)
    assert all(torch.isfinite(v).all() for v in weights.values())
    # LoRA's B matrices start at zero; restoring the pre-update state puts them back
    assert all(not v.any() for k, v in weights.items() if "lora_B" in k)


def test_non_finite_weights_without_a_snapshot_are_not_saved(grpo, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "3", "--learning_rate", "1e39", "--lr_scheduler_type", "constant",
                          "--health.snapshot", "false")
    assert code == 1, out + err
    assert "The weights are non-finite and were not saved (health.snapshot: true keeps a copy to restore); " \
           "no earlier checkpoint exists" in out + err
    assert not list((tmp_path / "out").glob("checkpoint-*"))


# ------------------------------------------------------------------ the guard alone


def test_guard_drops_gradients_of_a_non_finite_step_and_keeps_the_snapshot():
    w = torch.nn.Parameter(torch.ones(3))
    guard = Guard([w], policy="stop", snapshot=True)
    w.grad = torch.ones(3)
    guard.observe_loss(torch.tensor(0.5))
    assert guard.before_update(torch.tensor(1.0), step=1, lr=0.1) is True
    with torch.no_grad():
        w.add_(1.0)  # the "update"
    assert guard.after_update(step=1, lr=0.1) is True
    guard.observe_loss(torch.tensor(math.inf))
    w.grad = torch.ones(3)
    assert guard.before_update(torch.tensor(2.0), step=2, lr=0.1) is False
    assert w.grad is None  # the optimizer skips a parameter without gradient
    assert torch.equal(w.detach(), torch.ones(3))  # a non-finite loss: weights from before step 1's update
    assert guard.stop is not None and guard.stop.metric == "loss" and guard.stop.restored


def test_a_dropped_gradient_names_the_tensors_it_was_non_finite_in():
    """A NaN made in layer k reaches the gradients of layer k and those below it: the event
    names how many trainable tensors, and the first and last of them in the model's order."""
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    a, b, c = (torch.nn.Parameter(torch.ones(2)) for _ in range(3))
    guard = Guard([frozen, a, b, c], policy="skip", snapshot=False, names=["embed", "l0.a", "l0.b", "l1.c"])
    a.grad, b.grad, c.grad = torch.tensor([math.nan, 1.0]), torch.ones(2), torch.tensor([1.0, math.inf])
    guard.observe_gradients()  # before clipping: clipping by a NaN norm then makes every gradient NaN
    for p in (a, b, c):
        p.grad.mul_(math.nan)
    assert guard.before_update(torch.tensor(math.nan), step=4, lr=0.1) is False
    [event] = guard.events
    assert event.spread == (2, 3, "l0.a", "l1.c")
    assert event.describe().endswith("; non-finite gradients in 2 of 3 trainable tensors, from l0.a to l1.c")
    a.grad, b.grad, c.grad = torch.ones(2), torch.tensor([math.nan, 0.0]), None  # c: no gradient this step
    guard.observe_gradients()
    assert guard.before_update(torch.tensor(math.nan), step=5, lr=0.1) is False
    assert guard.events[-1].describe().endswith("; non-finite gradients in 1 of 2 trainable tensors, l0.b")
    a.grad, b.grad = torch.tensor([math.nan, 1.0]), torch.ones(2)
    guard.observe_gradients()
    guard.observe_loss(torch.tensor(math.nan))  # a non-finite loss: no gradient tally (the loss is the cause)
    assert guard.before_update(torch.tensor(1.0), step=6, lr=0.1) is False
    assert guard.events[-1].spread is None and "trainable tensors" not in guard.events[-1].describe()


def test_guard_without_snapshot_cannot_restore_non_finite_weights():
    w = torch.nn.Parameter(torch.ones(2))
    guard = Guard([w], policy="skip", snapshot=False)
    assert guard.before_update(torch.tensor(1.0), step=1, lr=1.0)
    with torch.no_grad():
        w[0] = math.nan
    assert guard.after_update(step=1, lr=1.0) is False
    assert guard.stop is not None and not guard.stop.restored  # skip cannot go on from NaN weights


def test_snapshot_auto_is_on_for_a_small_trainable_share_or_size():
    frozen = torch.nn.Parameter(torch.zeros(95), requires_grad=False)
    small, large = torch.nn.Parameter(torch.zeros(5)), torch.nn.Parameter(torch.zeros(50))
    assert wants_snapshot("auto", [frozen, small], 100) is True  # 5 %
    assert wants_snapshot("auto", [frozen, large], 145) is True  # 34 %, but 200 bytes
    # 34 % and 1.2 GB of float32 (over 1 GiB): no copy (meta tensors take no memory)
    big = torch.nn.Parameter(torch.empty(300_000_000, device="meta"))
    frozen_big = torch.nn.Parameter(torch.empty(580_000_000, device="meta"), requires_grad=False)
    assert wants_snapshot("auto", [frozen_big, big], 880_000_000) is False
    # 268,435,456 float32 weights are exactly 1 GiB: still kept
    edge = torch.nn.Parameter(torch.empty(1 << 28, device="meta"))
    assert wants_snapshot("auto", [frozen_big, edge], 580_000_000 + (1 << 28)) is True
    assert wants_snapshot(True, [large], 50) is True and wants_snapshot(False, [small], 100) is False


def test_guard_catches_an_update_that_blows_the_weights_up_and_restores_them():
    w = torch.nn.Parameter(torch.tensor([0.5, -2.0, 1.0]))
    guard = Guard([w], policy="stop", snapshot=True)
    w.grad = torch.ones(3)
    assert guard.before_update(torch.tensor(1.0), step=1, lr=0.1) is True
    with torch.no_grad():
        w.add_(150.0)  # largest |w|: 2 -> 151, x75.5: under the default 100
    assert guard.after_update(step=1, lr=0.1) is True and guard.stop is None
    w.grad = torch.ones(3)
    assert guard.before_update(torch.tensor(1.0), step=2, lr=1e30) is True
    with torch.no_grad():
        w.sub_(1e30)  # largest |w|: 151 -> 1e30
    assert guard.after_update(step=2, lr=1e30) is False
    event = guard.stop
    assert (event.metric, event.step, event.restored, event.weights_of) == ("jump", 2, True, 1)
    assert event.sizes == pytest.approx((151.0, 1e30)) and event.value == pytest.approx(1e30 / 151)
    assert event.saves_checkpoint
    assert torch.equal(w.detach(), torch.tensor([150.5, 148.0, 151.0]))  # as step 1 left them
    assert "largest |weight| 151 -> 1e+30" in event.describe()


def default_guards(w) -> dict:
    """The guard as a run builds it from the config's health section, and its own defaults."""
    from grpo_core.config.schema import HealthSection
    from grpo_core.trainer.nonfinite import GuardSettings

    return {"health section": Guard.of(GuardSettings(max_jump=HealthSection().max_weight_jump), [w]),
            "GuardSettings()": Guard.of(GuardSettings(), [w]), "Guard()": Guard([w], snapshot=True)}


@pytest.mark.parametrize("growth, blown_up", [(99.0, False), (101.0, True)])
def test_the_documented_threshold_100_times_separates_an_update_from_a_blow_up(growth, blown_up):
    """docs/config.md and docs/gpu.md: an update growing the largest trainable weight more
    than 100 times is a blow-up. Largest |w| 2 -> 198 (x99) trains on; 2 -> 202 (x101)
    stops with the weights restored, whichever default the guard was built from."""
    for source, guard in default_guards(w := torch.nn.Parameter(torch.tensor([0.5, -2.0, 1.0]))).items():
        with torch.no_grad():
            w.copy_(torch.tensor([0.5, -2.0, 1.0]))
        w.grad = torch.ones(3)
        assert guard.before_update(torch.tensor(1.0), step=1, lr=0.1) is True
        with torch.no_grad():
            w.mul_(growth)
        assert guard.after_update(step=1, lr=0.1) is (not blown_up), source
        if blown_up:
            assert (guard.stop.metric, guard.stop.sizes) == ("jump", pytest.approx((2.0, 202.0))), source
            assert torch.equal(w.detach(), torch.tensor([0.5, -2.0, 1.0])), source  # put back
        else:
            assert guard.stop is None and guard.events == [], source


def test_guard_blow_up_without_a_snapshot_stops_without_saving_and_zero_turns_the_check_off():
    w = torch.nn.Parameter(torch.ones(2))
    guard = Guard([w], policy="skip", snapshot=False)
    assert guard.before_update(torch.tensor(1.0), step=1, lr=1e9)
    with torch.no_grad():
        w.mul_(1e9)
    assert guard.after_update(step=1, lr=1e9) is False
    assert guard.stop.metric == "jump" and not guard.stop.restored and not guard.stop.saves_checkpoint
    off = Guard([w], policy="stop", snapshot=False, max_jump=0)
    assert off.before_update(torch.tensor(1.0), step=1, lr=1e9)
    with torch.no_grad():
        w.mul_(1e9)
    assert off.after_update(step=1, lr=1e9) is True
