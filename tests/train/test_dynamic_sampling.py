"""Dynamic sampling: flat groups are dropped and replaced by fresh prompts' groups, the
trained flat share is 0 (or logged, when the rounds run out), and --resume replays it."""

from __future__ import annotations

import json
import types

import pytest

import grpo_core
from grpo_core.trainer import rollout_log
from grpo_core.trainer.dynamic import PromptStream, choose, flat_groups

from .conftest import TINY


def parity(completions, question, **kwargs):
    """Flat by construction on even questions ('What is 4 + 1?': 0.5 for every completion);
    on odd ones the sum of the completion's character codes modulo 97, over 97 (it differs
    from completion to completion)."""
    out = []
    for c, q in zip(completions, question):
        n = int(q.split()[2])
        out.append(0.5 if n % 2 == 0 else sum(map(ord, grpo_core.completion_text(c))) % 97 / 97)
    return out


@pytest.fixture
def parity_reward(register_plugin):
    mod = types.ModuleType("parity_plugin")
    mod.register_rewards = grpo_core.hookimpl(lambda register: register("test.parity", parity))
    register_plugin(mod, name="parity_plugin")


# two groups of 4 a step (per_device_train_batch_size 8, num_generations 4)
ARGS = ("--rewards", "test.parity", "--no-check", "--per_device_train_batch_size", "8", "--max_steps", "3")


def steps_of(path):
    return [r for r in map(json.loads, path.read_text().splitlines()) if "reward" in r]


def mean(values) -> float:
    return sum(values) / len(values)


def even(prompt: str) -> bool:
    return int(prompt.split()[2]) % 2 == 0


def test_without_dynamic_sampling_the_flat_share_is_the_constructed_one(grpo, parity_reward, tmp_path):
    code, out, err = grpo(TINY, *ARGS)
    assert code == 0, out + err
    log = rollout_log.read(tmp_path / "out").to_pylist()
    for step in steps_of(tmp_path / "out" / "metrics.jsonl"):
        groups = {r["group"]: r["prompt"] for r in log if r["step"] == step["step"]}
        # TRL's own count: the share of groups on an even question
        assert step["frac_reward_zero_std"] == sum(map(even, groups.values())) / 2
        assert "sampling/rounds" not in step


def watch_training(monkeypatch):
    """What the loss of each training step is handed, decoded: per row the step, the prompt's question
    number, the completion text, the advantage; and, when the batch has reference
    log-probs (beta > 0), the largest gap on completion tokens between them and the
    base model's log-probs recomputed on the batch as handed."""
    import re

    import torch

    from grpo_core.trainer.trainer import GrpoTrainer

    seen = {"rows": [], "ref_gap": []}
    original = GrpoTrainer.compute_loss

    def compute_loss(self, model, inputs, *args, **kwargs):
        tok = self.processing_class
        step = self.state.global_step + 1
        for ids, mask, cids, cmask, adv in zip(inputs["prompt_ids"], inputs["prompt_mask"], inputs["completion_ids"],
                                              inputs["completion_mask"], inputs["advantages"]):
            prompt = tok.decode(ids[mask.bool()], skip_special_tokens=True)
            number = int(re.findall(r"What is (\d+) \+ 1\?", prompt)[-1])
            seen["rows"].append((step, number, tok.decode(cids[cmask.bool()], skip_special_tokens=True), float(adv)))
        if "ref_per_token_logps" in inputs:
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
            with torch.no_grad():
                if self.ref_model is not None:  # full fine-tuning: TRL's frozen copy of the starting model
                    ref, _, _ = self._get_per_token_logps_and_entropies(self.ref_model, ids, mask,
                                                                        inputs["completion_ids"].size(1))
                else:
                    with self.accelerator.unwrap_model(self.model).disable_adapter():
                        ref, _, _ = self._get_per_token_logps_and_entropies(self.model, ids, mask,
                                                                            inputs["completion_ids"].size(1))
            on = inputs["completion_mask"].bool()
            seen["ref_gap"].append((step, float((ref[on] - inputs["ref_per_token_logps"][on]).abs().max())))
        return original(self, model, inputs, *args, **kwargs)

    monkeypatch.setattr(GrpoTrainer, "compute_loss", compute_loss)
    return seen


def test_dynamic_sampling_trains_no_flat_group_and_counts_what_it_dropped(grpo, parity_reward, tmp_path, monkeypatch):
    """beta 0.04 as the quickstart has it: the reference log-probs travel with the picked rows."""
    seen = watch_training(monkeypatch)
    code, out, err = grpo(TINY, *ARGS, "--sampling.dynamic", "true", "--sampling.max_rounds", "8", "--beta", "0.04")
    assert code == 0, out + err
    log = rollout_log.read(tmp_path / "out").to_pylist()
    metrics = steps_of(tmp_path / "out" / "metrics.jsonl")
    assert [s["step"] for s in metrics] == [1, 2, 3] and any(s["sampling/rounds"] > 1 for s in metrics)
    for step in metrics:
        rows = [r for r in log if r["step"] == step["step"]]
        rounds = sorted({r["round"] for r in rows})
        groups = {(r["round"], r["group"]): r["prompt"] for r in rows}
        # every round generated 2 groups; the step trains 2 of them, so the rest were dropped
        assert step["sampling/rounds"] == len(rounds) and rounds == list(range(len(rounds)))
        assert step["sampling/groups_generated"] == 2 * len(rounds) == len(groups)
        assert step["sampling/groups_dropped"] == 2 * len(rounds) - 2
        assert step["sampling/flat_share_trained"] == 0.0
        # the rounds stopped as soon as 2 odd (spread) groups had been generated
        odd = [key for key, prompt in sorted(groups.items()) if not even(prompt)]
        assert len(odd) >= 2 and odd[1][0] == rounds[-1]
        # what the step's loss was handed (TRL shuffles the rows): 8 rows on odd questions, each
        # question's advantages with a spread; the first two odd groups generated, completions and all
        batch = [r for r in seen["rows"] if r[0] == step["step"]]
        assert len(batch) == 8 and all(n % 2 == 1 for _, n, _, _ in batch)
        for number in {n for _, n, _, _ in batch}:
            advantages = [a for _, n, _, a in batch if n == number]
            assert max(advantages) - min(advantages) > 1e-3
        expected = [(int(r["prompt"].split()[2]), r["completion"]) for key in odd[:2]
                    for r in rows if (r["round"], r["group"]) == key]
        assert sorted((n, c) for _, n, c, _ in batch) == sorted(expected)
        # the log marks the two trained groups: the first two odd ones
        trained = sorted({(r["round"], r["group"]) for r in rows if r["trained"]})
        assert trained == odd[:2]
        # the step's figures are the trained groups' (what the trainer's metrics() hands to TRL's
        # log was rewritten), not the rounds' average with the dropped flat groups in it
        picked = [r for r in rows if r["trained"]]
        assert step["reward"] == pytest.approx(mean([r["total"] for r in picked]), rel=1e-5)
        assert step["rewards/test.parity/mean"] == pytest.approx(mean([r["reward/test.parity"] for r in picked]),
                                                                 rel=1e-5)
        assert step["frac_reward_zero_std"] == 0.0
        if len(rounds) > 1:  # the rounds' average kept apart: each round's mean, flat groups included
            by_round = [mean([r["total"] for r in rows if r["round"] == k]) for k in rounds]
            assert step["sampling/all_rounds/reward"] == pytest.approx(mean(by_round), rel=1e-5)
            assert step["sampling/all_rounds/frac_reward_zero_std"] > 0  # a round before the last had a flat group
    # each trained row's reference log-probs are the base model's on that row
    assert [s for s, _ in seen["ref_gap"]] == [1, 2, 3]
    assert all(gap < 1e-4 for _, gap in seen["ref_gap"]), seen["ref_gap"]


def test_oversample_makes_each_round_one_call_for_k_times_the_groups(grpo, parity_reward, tmp_path, monkeypatch):
    """oversample 3: each round scores 6 groups (24 rows) in one call; the step trains the
    first two odd (spread) groups generated and drops the rest."""
    seen = watch_training(monkeypatch)
    code, out, err = grpo(TINY, *ARGS, "--sampling.dynamic", "true", "--sampling.max_rounds", "8",
                          "--sampling.oversample", "3", "--beta", "0.04")
    assert code == 0, out + err
    log = rollout_log.read(tmp_path / "out").to_pylist()
    for step in steps_of(tmp_path / "out" / "metrics.jsonl"):
        rows = [r for r in log if r["step"] == step["step"]]
        rounds = sorted({r["round"] for r in rows})
        groups = {(r["round"], r["group"]): r["prompt"] for r in rows}
        assert all(sum(r["round"] == k for r in rows) == 24 for k in rounds)  # 6 groups of 4 a round
        assert step["sampling/groups_generated"] == 6 * len(rounds) == len(groups)
        assert step["sampling/groups_dropped"] == 6 * len(rounds) - 2
        odd = [key for key, prompt in sorted(groups.items()) if not even(prompt)]
        assert len(odd) >= 2 and odd[1][0] == rounds[-1]
        assert sorted({(r["round"], r["group"]) for r in rows if r["trained"]}) == odd[:2]
        assert step["sampling/flat_share_trained"] == 0.0 and step["frac_reward_zero_std"] == 0.0
        batch = [r for r in seen["rows"] if r[0] == step["step"]]
        expected = [(int(r["prompt"].split()[2]), r["completion"]) for key in odd[:2]
                    for r in rows if (r["round"], r["group"]) == key]
        assert sorted((n, c) for _, n, c, _ in batch) == sorted(expected)
    assert all(gap < 1e-4 for _, gap in seen["ref_gap"]), seen["ref_gap"]


def test_full_fine_tuning_trains_on_the_reference_models_log_probs_of_the_picked_rows(grpo, parity_reward, tmp_path,
                                                                                       monkeypatch):
    """No adapters: the reference is TRL's frozen copy of the starting model, run once on
    the batch trained (the learning rate moves the trained copy away from it)."""
    seen = watch_training(monkeypatch)
    code, out, err = grpo(TINY, *ARGS, "--sampling.dynamic", "true", "--sampling.max_rounds", "8", "--beta", "0.04",
                          "--lora.enabled", "false", "--learning_rate", "0.05")
    assert code == 0, out + err
    metrics = steps_of(tmp_path / "out" / "metrics.jsonl")
    assert any(s["sampling/rounds"] > 1 for s in metrics) and metrics[-1]["kl"] > 0
    assert [s for s, _ in seen["ref_gap"]] == [1, 2, 3]
    assert all(gap < 1e-4 for _, gap in seen["ref_gap"]), seen["ref_gap"]


def test_when_the_rounds_run_out_flat_groups_fill_the_batch_and_are_counted(grpo, parity_reward, tmp_path):
    code, out, err = grpo(TINY, *ARGS, "--sampling.dynamic", "true", "--sampling.max_rounds", "1")
    assert code == 0, out + err
    log = rollout_log.read(tmp_path / "out").to_pylist()
    for step in steps_of(tmp_path / "out" / "metrics.jsonl"):
        groups = {r["group"]: r["prompt"] for r in log if r["step"] == step["step"]}
        assert step["sampling/rounds"] == 1 and step["sampling/groups_dropped"] == 0
        assert step["sampling/flat_share_trained"] == sum(map(even, groups.values())) / 2


def test_resume_replays_the_uninterrupted_run(grpo, parity_reward, tmp_path):
    from safetensors.torch import load_file

    from .conftest import INTERRUPT

    dyn = ("--sampling.dynamic", "true", "--sampling.max_rounds", "6", "--max_steps", "4", "--save_steps", "1",
           "--rewards", "test.parity", "test.interrupt:0", "--no-check", "--per_device_train_batch_size", "8")
    code, out, err = grpo(TINY, *dyn, out=tmp_path / "whole")
    assert code == 0, err
    INTERRUPT.update(at_call=4, calls=0, signal="SIGINT")  # the 4th generation round: during step 2 or later
    code, out, err = grpo(TINY, *dyn, out=tmp_path / "cut")
    assert code == 130, err
    [checkpoint] = sorted((tmp_path / "cut").glob("checkpoint-*"))
    at = int(checkpoint.name.split("-")[1])
    whole = rollout_log.read(tmp_path / "whole").to_pylist()
    # the prompt stream feeds every round after a step's first, 2 fresh prompts each (2 groups a
    # step): its saved position is 2 x the extra rounds the uninterrupted run made up to the checkpoint
    extra = sum(max(r["round"] for r in whole if r["step"] == s) for s in range(1, at + 1))
    position = json.loads((checkpoint / "grpo_dynamic.json").read_text())["position"]
    assert position == 2 * extra and position > 0
    # and the steps after the checkpoint draw from it again, so a stream restarted at 0 would show
    assert at < 4 and any(r["round"] > 0 for r in whole if r["step"] > at)
    code, out, err = grpo(TINY, *dyn, "--resume", out=tmp_path / "cut")
    assert code == 0, err

    def seen(run):
        return [(r["step"], r["round"], r["prompt"], r["completion"]) for r in rollout_log.read(tmp_path / run).to_pylist()]

    assert seen("cut") == seen("whole")
    # the same updates: each step's gradient norm, and the final adapter weights
    norms = {run: [s["grad_norm"] for s in steps_of(tmp_path / run / "metrics.jsonl")] for run in ("whole", "cut")}
    assert len(norms["whole"]) == 4 and norms["cut"] == pytest.approx(norms["whole"], rel=1e-5)
    weights = {run: load_file(tmp_path / run / "adapter" / "adapter_model.safetensors") for run in ("whole", "cut")}
    assert weights["cut"].keys() == weights["whole"].keys()
    for name, tensor in weights["whole"].items():
        assert (weights["cut"][name] - tensor).abs().max() < 1e-6, name


@pytest.mark.parametrize("rewards, expected", [
    ([[1, 1, 1, 1, 0, 1, 0, 1]], [True, False]),
    ([[1, 1, None, 1, 0.5, None, None, None]], [True, True]),  # one scorable completion: no spread
    ([[1, 0, 1, 0], [0, 1, 0, 1]], [True]),  # weights 1 and 1: every total 1
])
def test_a_group_is_flat_when_its_weighted_totals_agree(rewards, expected):
    assert flat_groups(rewards, [1.0] * len(rewards), 4) == expected


def test_places_go_to_groups_with_a_spread_then_to_the_first_flat_ones():
    # round 0: flat, spread; round 1: flat, flat; round 2: spread, spread
    flags = [[True, False], [True, True], [False, False]]
    assert choose(flags, 2) == ([(0, 1), (2, 0)], 0)
    assert choose(flags[:2], 2) == ([(0, 1), (0, 0)], 1)  # rounds ran out: one flat place


def test_the_prompt_stream_is_seeded_and_resumable(tmp_path):
    a = PromptStream(5, seed=3)
    first = a.take(7)  # one pass of 5, then 2 of the next pass
    assert sorted(first[:5]) == [0, 1, 2, 3, 4] and len(set(first[5:])) == 2
    a.save(tmp_path)
    b = PromptStream(5, seed=0)
    assert b.load(tmp_path) and b.take(3) == a.take(3)


def test_flat_is_judged_on_the_named_reward_when_sampling_metric_names_one(grpo, parity_reward, tmp_path):
    """test.short gives every group a spread, so on the total nothing is flat; judged on
    test.parity alone, the even questions' groups are flat and dropped."""
    args = ("--rewards", "test.parity", "test.short:0.1", "--no-check", "--per_device_train_batch_size", "8",
            "--max_steps", "3", "--sampling.dynamic", "true", "--sampling.max_rounds", "8")
    code, out, err = grpo(TINY, *args, out=tmp_path / "total")
    assert code == 0, err
    assert all(s["sampling/rounds"] == 1 for s in steps_of(tmp_path / "total" / "metrics.jsonl"))
    code, out, err = grpo(TINY, *args, "--sampling.metric", "test.parity", out=tmp_path / "parity")
    assert code == 0, err
    log = rollout_log.read(tmp_path / "parity").to_pylist()
    for step in steps_of(tmp_path / "parity" / "metrics.jsonl"):
        groups = {(r["round"], r["group"]): r["prompt"] for r in log if r["step"] == step["step"]}
        assert step["sampling/groups_dropped"] == len(groups) - 2 and step["sampling/flat_share_trained"] == 0.0
    assert any(s["sampling/rounds"] > 1 for s in steps_of(tmp_path / "parity" / "metrics.jsonl"))


def test_a_metric_that_is_not_a_reward_is_a_clear_error(grpo, parity_reward):
    code, out, err = grpo(TINY, "--rewards", "test.parity", "--sampling.dynamic", "true", "--sampling.metric",
                          "math.correctness", "--dry-run")
    assert code == 2 and "sampling.metric is 'math.correctness', which is not a reward of stage 'main' (test.parity)" in err


def trained_groups(out):
    """Per (step, round) generation: the prompts of the groups the log marks trained."""
    trained = {}
    for r in rollout_log.read(out).to_pylist():
        if r["trained"]:
            trained.setdefault(r["step"], set()).add((r["round"], r["group"], r["prompt"]))
    return trained


@pytest.mark.parametrize("extra, groups, per_round", [
    # a generation batch of 2 x 8 completions (4 groups) serves two optimizer steps
    (("--steps_per_generation", "2"), 4, 4),
    # each generation batch is trained on twice (TRL reuses it; no new rounds on the second pass)
    (("--num_iterations", "2"), 2, 2),
    # the same split batch from rounds of 8 groups in one call each
    (("--steps_per_generation", "2", "--sampling.oversample", "2"), 4, 8),
])
def test_dynamic_sampling_with_batches_reused_or_split_trains_only_spread_groups(grpo, parity_reward, tmp_path,
                                                                                  extra, groups, per_round):
    code, out, err = grpo(TINY, *ARGS, "--max_steps", "4", "--sampling.dynamic", "true",
                          "--sampling.max_rounds", "8", *extra)
    assert code == 0, out + err
    trained = trained_groups(tmp_path / "out")
    # two generations in 4 steps either way; each trains `groups` groups, none of them flat
    assert len(trained) == 2
    for step, chosen in trained.items():
        assert len(chosen) == groups, (step, chosen)
        assert not any(even(prompt) for _, _, prompt in chosen)
    # every round generated per_round groups (oversample: in one call)
    made = {(r["step"], r["round"], r["group"]) for r in rollout_log.read(tmp_path / "out").to_pylist()}
    for step, round_ in {(s, r) for s, r, _ in made}:
        assert sum(1 for s, r, _ in made if (s, r) == (step, round_)) == per_round, (step, round_)


def test_dynamic_sampling_applies_to_every_stage(grpo, parity_reward, tmp_path):
    config = tmp_path / "stages.yaml"
    config.write_text(TINY.read_text().split("rewards:")[0] + (
        "per_device_train_batch_size: 8\nnum_generations: 4\nmax_completion_length: 8\nsave_strategy: 'no'\n"
        "report_to: []\nsampling: {dynamic: {max_rounds: 8}}\n"
        "stages:\n  - {name: first, rewards: [test.parity], max_steps: 1}\n"
        "  - {name: second, rewards: [test.parity], max_steps: 1}\n"))
    code, out, err = grpo(config, "--no-check")
    assert code == 0, out + err
    log = rollout_log.read(tmp_path / "out").to_pylist()  # one log for the run, a stage column
    for stage in ("first", "second"):
        rows = [r for r in log if r["stage"] == stage and r["trained"]]
        assert len({(r["round"], r["group"]) for r in rows}) == 2, stage
        assert not any(even(r["prompt"]) for r in rows), stage


def test_merge_takes_the_picked_groups_rows_padding_prompts_left_and_completions_right():
    import torch

    from grpo_core.trainer.dynamic import merge

    def batch(base, prompt_width, completion_width):
        """4 rows (2 groups of 2); row i's tokens base + 10 i + column, its ref log-probs -(base + i)."""
        rows = range(4)
        return {
            "prompt_ids": torch.tensor([[base + 10 * i + 1 + j for j in range(prompt_width)] for i in rows]),
            "prompt_mask": torch.ones(4, prompt_width, dtype=torch.long),
            "completion_ids": torch.tensor([[base + 10 * i + 5 + j for j in range(completion_width)] for i in rows]),
            "completion_mask": torch.ones(4, completion_width, dtype=torch.long),
            "ref_per_token_logps": torch.tensor([[-(base + i) / 10] * completion_width for i in rows]),
            "advantages": torch.tensor([base + i for i in rows], dtype=torch.float),
            "num_items_in_batch": torch.tensor(4 * completion_width),
        }

    # round 0: prompts of 3 tokens, completions of 2; round 1: prompts of 2, completions of 4
    rounds = [batch(0, 3, 2), batch(100, 2, 4)]
    # round 0's group 1 (rows 2, 3), then round 1's group 1 (rows 2, 3), then its group 0 (rows 0, 1)
    out = merge(rounds, [(0, 1), (1, 1), (1, 0)], 2, pad_id=99)
    assert set(out) == set(rounds[0]) - {"num_items_in_batch"}  # the trainer counts the merged tokens itself
    assert out["prompt_ids"].tolist() == [[21, 22, 23], [31, 32, 33],
                                          [99, 121, 122], [99, 131, 132], [99, 101, 102], [99, 111, 112]]
    assert out["prompt_mask"].tolist() == [[1, 1, 1]] * 2 + [[0, 1, 1]] * 4
    assert out["completion_ids"].tolist() == [[25, 26, 99, 99], [35, 36, 99, 99], [125, 126, 127, 128],
                                              [135, 136, 137, 138], [105, 106, 107, 108], [115, 116, 117, 118]]
    assert out["completion_mask"].tolist() == [[1, 1, 0, 0]] * 2 + [[1, 1, 1, 1]] * 4
    assert torch.allclose(out["ref_per_token_logps"], torch.tensor(
        [[-0.2, -0.2, 0.0, 0.0], [-0.3, -0.3, 0.0, 0.0], [-10.2] * 4, [-10.3] * 4, [-10.0] * 4, [-10.1] * 4]))
    assert out["advantages"].tolist() == [2.0, 3.0, 102.0, 103.0, 100.0, 101.0]


def test_merge_refuses_a_batch_entry_it_cannot_lay_out():
    import torch

    from grpo_core.trainer.dynamic import merge

    one = {"prompt_ids": torch.ones(2, 1, dtype=torch.long), "pixel_values": torch.ones(2, 3)}
    with pytest.raises(ValueError, match=r"cannot merge \['pixel_values'\]"):
        merge([one, one], [(1, 0)], 2, pad_id=0)
