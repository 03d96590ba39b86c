"""GrpoTrainer's features, each on its own, without a trainer: the settings types,
the decisions they make and what they write, on hand-made inputs with the expected
values worked out by hand. The training tests (test_dynamic_sampling,
test_exact_resume, test_rollout_log, test_nonfinite, test_time_limits, ...) run
the same code inside a trainer."""

from __future__ import annotations

import math
import types
from collections import defaultdict

import pytest
import torch

from grpo_core.base.errors import ConfigError
from grpo_core.rewards.policy import GuardedReward, PolicySettings, Stalls
from grpo_core.trainer import rollout_log
from grpo_core.trainer.batch import Batch, Round
from grpo_core.trainer.chain import Chain, LearningSettings
from grpo_core.trainer.decoding import FastSampling, Sampling
from grpo_core.trainer.dynamic import (
    DynamicSampling,
    DynamicSettings,
    PromptStream,
    choose,
    enough,
    metrics,
    own,
    relog,
    trained_figures,
    trained_scores,
)
from grpo_core.trainer.exact_resume import ExactResume, ResumeSettings, take_learning_rate
from grpo_core.trainer.nonfinite import Guard, GuardSettings
from grpo_core.trainer.reward_columns import name_columns
from grpo_core.trainer.rollout_log import RolloutLog, RolloutLogSettings

# ------------------------------------------------------------------ dynamic sampling


def test_the_rounds_stop_when_every_process_has_its_groups_with_a_spread():
    """2 processes x 2 groups each (process 0 owns groups 0-1 of every round, process 1
    groups 2-3); True: flat."""
    first = [False, True, True, True]  # process 0: 1 spread group, process 1: none
    assert not enough([first], local=2, processes=2)
    second = [False, True, False, False]  # process 0: 1 + 1, process 1: 0 + 2
    assert enough([first, second], local=2, processes=2)
    assert enough([[False, False]], local=2, processes=1)
    assert not enough([[False, True], [True, True]], local=2, processes=1)  # one spread group in two rounds
    # each process's picks: spread groups in the order generated, as (round, group within its share)
    assert choose([first[:2], second[:2]], 2) == ([(0, 0), (1, 0)], 0)
    assert choose([first[2:], second[2:]], 2) == ([(1, 0), (1, 1)], 0)
    assert metrics([first, second], [([], 0), ([], 0)], local=2, processes=2) == {
        "rounds": 2.0, "groups_generated": 8.0, "groups_dropped": 4.0, "flat_share_trained": 0.0}


def test_when_the_rounds_run_out_the_first_flat_groups_fill_the_places_left():
    flags = [[False, True, True, True]]  # one round (max_rounds 1)
    p0, p1 = choose([flags[0][:2]], 2), choose([flags[0][2:]], 2)
    assert p0 == ([(0, 0), (0, 1)], 1)  # its spread group, then its first flat one
    assert p1 == ([(0, 0), (0, 1)], 2)
    # 3 of the 4 groups trained are flat; nothing generated was dropped
    assert metrics(flags, [p0, p1], local=2, processes=2) == {
        "rounds": 1.0, "groups_generated": 4.0, "groups_dropped": 0.0, "flat_share_trained": 0.75}


def test_flat_is_judged_on_the_total_or_on_one_reward():
    """Groups of 2. Rewards a (weight 1) and b (0.5): group 0 scores a = 1, 1 and b = 0, 0
    (totals 1, 1); group 1 a = 0, 1 and b = 2, 0 (totals 0 + 1 = 1 and 1 + 0 = 1)."""
    logs = {"rewards": {"a": [1.0, 1.0, 0.0, 1.0], "b": [0.0, 0.0, 2.0, 0.0]}}
    total = DynamicSampling(DynamicSettings(3, "total"), list(range(4)), group_size=2, local_batch=4, seed=1)
    assert total.flat(logs, ["a", "b"], [1.0, 0.5]) == [True, True]  # both groups' totals agree
    on_a = DynamicSampling(DynamicSettings(3, "a"), list(range(4)), group_size=2, local_batch=4, seed=1)
    assert on_a.flat(logs, ["a", "b"], [1.0, 0.5]) == [True, False]  # group 1 passes once and fails once


def test_fresh_prompts_come_from_the_seeded_stream_each_process_its_share():
    data = [{"prompt": f"q{i}"} for i in range(5)]
    dyn = DynamicSampling(DynamicSettings(), data, group_size=2, local_batch=2, seed=7)
    drawn = PromptStream(5, seed=7).take(2)  # the same draw on every process
    assert dyn.fresh(1, processes=2, me=1) == [data[drawn[1]]] * 2  # process 1's one prompt, once per completion
    assert dyn.stream.position == 2
    with pytest.raises(ConfigError, match=r"generation batch .* = 6\) to hold whole groups of num_generations = 4"):
        DynamicSampling(DynamicSettings(), data, group_size=4, local_batch=6, seed=7)


class _FakeTrl:
    """What the chain asks of TRL, one process; round r scores ``scores[r]`` (reward "a",
    weight 1) and its completion ids are 10 r + row; ``logged``: TRL's metrics until its next log."""

    def __init__(self, scores: list[list[float]], widths: list[int]):
        self.scores, self.widths = scores, widths
        self.batches: list[list[dict]] = []
        self.logged = defaultdict(list)
        self.references: list[bool] = []  # each round's reference=
        self.referenced: list[list] = []  # the completion ids of each batch given reference log-probs

    def score_round(self, batch, round_, reference=True):
        self.batches.append(batch)
        self.references.append(reference)
        flat = [len(set(self.scores[round_][i:i + 2])) == 1 for i in range(0, len(batch), 2)]
        self.logged["frac_reward_zero_std"].append(sum(flat) / len(flat))  # as TRL logs each round
        n, w = len(batch), self.widths[round_]
        ids = torch.tensor([[10 * round_ + i] * w for i in range(n)])
        return Round(round_, batch, {
            "prompt_ids": torch.zeros(n, 1, dtype=torch.long), "prompt_mask": torch.ones(n, 1, dtype=torch.long),
            "completion_ids": ids, "completion_mask": torch.ones(n, w, dtype=torch.long),
            "advantages": torch.arange(n, dtype=torch.float) + round_ * 100}, {"rewards": {"a": self.scores[round_]}})

    def reference_logps(self, batch):
        self.referenced.append(batch["completion_ids"].tolist())
        return -batch["completion_ids"].float()  # a stand-in: minus each token id

    def run(self, dyn: DynamicSampling, inputs: list[dict]) -> Batch:
        """One batch down the chain (the method: TRL's own advantages), dynamic sampling on."""
        chain = Chain(LearningSettings(), score=self.score_round, reference=self.reference_logps, processes=ONE,
                      dynamic=dyn)
        return chain.batch(Batch(0, inputs, ["a"], [1.0], 2), self.logged)

    def recorded(self) -> dict[str, list[float]]:
        return {k: v for k, v in self.logged.items() if k.startswith("sampling/") and "all_rounds" not in k}


ONE = types.SimpleNamespace(num_processes=1, process_index=0, is_main_process=True, gather=lambda t: t)


def test_generate_makes_rounds_until_enough_and_merges_the_picked_groups():
    """Groups of 2, 2 places. Round 0: group 0 flat (1, 1), group 1 spread (0, 1); round 1
    (fresh prompts): group 0 flat, group 1 spread: the batch is round 0's group 1 (rows 2,
    3) and round 1's group 1, completions padded to round 0's width 3 with the pad id."""
    data = [{"prompt": f"q{i}"} for i in range(6)]
    trainer = _FakeTrl([[1.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]], widths=[3, 2])
    dyn = DynamicSampling(DynamicSettings(max_rounds=5), data, group_size=2, local_batch=4, seed=0, pad_id=-1)
    inputs = [data[0], data[0], data[1], data[1]]
    batch = trainer.run(dyn, inputs)
    out = batch.tensors
    assert len(trainer.batches) == 2 and trainer.batches[0] is inputs
    assert out["completion_ids"].tolist() == [[2, 2, 2], [3, 3, 3], [12, 12, -1], [13, 13, -1]]
    assert out["advantages"].tolist() == [2.0, 3.0, 102.0, 103.0]
    assert int(out["num_items_in_batch"]) == 3 + 3 + 2 + 2  # padding is not counted
    assert trainer.recorded() == {"sampling/rounds": [2.0], "sampling/groups_generated": [4.0],
                                  "sampling/groups_dropped": [2.0], "sampling/flat_share_trained": [0.0]}
    # each round had one flat group of two (0.5, 0.5 logged); the batch trained has none
    assert trainer.logged["frac_reward_zero_std"] == [0.0]
    assert trainer.logged["sampling/all_rounds/frac_reward_zero_std"] == [0.5]
    assert batch.scores() == {"a": [0.0, 1.0, 1.0, 0.0]}  # what adaptive weights read
    # the reference model runs once, on the 4 rows trained, not on each round's 4 (2 of them dropped)
    assert trainer.references == [False, False]
    assert trainer.referenced == [out["completion_ids"].tolist()]
    assert out["ref_per_token_logps"].tolist() == [[-2.0] * 3, [-3.0] * 3, [-12.0, -12.0, 1.0], [-13.0, -13.0, 1.0]]


def test_oversample_generates_the_places_times_k_groups_in_one_call_and_trains_the_first_with_a_spread():
    """oversample 3, 2 places, groups of 2: round 0 is one call on TRL's 2 prompts and 4
    fresh ones (12 rows). Its groups score flat, spread, flat, spread, spread, flat: the
    first two with a spread (1 and 3) are trained, group 4's spread is dropped, and no
    second round is made."""
    data = [{"prompt": f"q{i}"} for i in range(8)]
    scores = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    trainer = _FakeTrl([scores], widths=[2])
    dyn = DynamicSampling(DynamicSettings(max_rounds=3, oversample=3), data, group_size=2, local_batch=4, seed=0)
    inputs = [data[0], data[0], data[1], data[1]]
    batch = trainer.run(dyn, inputs)
    out = batch.tensors
    drawn = PromptStream(8, seed=0).take(4)
    assert trainer.batches == [inputs + [data[i] for i in drawn for _ in range(2)]]
    assert dyn.stream.position == 4
    assert out["completion_ids"].tolist() == [[2, 2], [3, 3], [6, 6], [7, 7]]  # groups 1 and 3, rows 2-3 and 6-7
    assert out["advantages"].tolist() == [2.0, 3.0, 6.0, 7.0]
    assert int(out["num_items_in_batch"]) == 8
    assert batch.picks == [(0, 1), (0, 3)]
    assert trainer.recorded() == {"sampling/rounds": [1.0], "sampling/groups_generated": [6.0],
                                  "sampling/groups_dropped": [4.0], "sampling/flat_share_trained": [0.0]}
    assert batch.scores() == {"a": [0.0, 1.0, 1.0, 0.0]}
    assert trainer.logged["frac_reward_zero_std"] == [0.0]  # the round's 3 flat groups of 6 kept apart
    assert trainer.logged["sampling/all_rounds/frac_reward_zero_std"] == [0.5]
    assert trainer.referenced == [out["completion_ids"].tolist()]


def test_oversampled_rounds_give_each_process_its_own_share():
    """2 processes, 1 place each, oversample 3: each round's gathered flags hold process
    0's 3 groups, then process 1's."""
    first = [True, True, True, False, True, True]  # process 0: none with a spread; process 1: its group 0
    assert own(first, 1, 2) == [False, True, True] and not enough([first], local=1, processes=2)
    second = [True, False, True, True, True, True]
    assert enough([first, second], local=1, processes=2)
    assert [choose([own(f, p, 2) for f in (first, second)], 1) for p in (0, 1)] == [([(1, 1)], 0), ([(0, 0)], 0)]


def test_one_round_with_enough_returns_trls_batch_as_it_was():
    trainer = _FakeTrl([[0.0, 1.0, 1.0, 0.0]], widths=[2])
    dyn = DynamicSampling(DynamicSettings(max_rounds=3), [{"prompt": "q"}] * 2, group_size=2, local_batch=4, seed=0)
    out = trainer.run(dyn, [{"prompt": "q"}] * 4).tensors
    assert "num_items_in_batch" not in out and out["completion_ids"].shape == (4, 2)
    assert trainer.references == [False] and trainer.referenced == [[[0, 0], [1, 1], [2, 2], [3, 3]]]
    assert out["ref_per_token_logps"].tolist() == [[0.0] * 2, [-1.0] * 2, [-2.0] * 2, [-3.0] * 2]
    assert trainer.logged["sampling/rounds"] == [1.0] and dyn.stream.position == 0


# ------------------------------------------------------------------ the rollout log


def test_rollout_log_settings_say_which_steps_are_kept(tmp_path):
    s = RolloutLogSettings(tmp_path, every=3, stage="second", offset=5)
    assert s.step(0) == 6  # the stage's first batch trains the run's step 6 (5 steps before it)
    assert [step for step in range(1, 11) if s.logged(step)] == [1, 4, 7, 10]
    assert not any(RolloutLogSettings(tmp_path, every=0).logged(step) for step in range(1, 11))
    assert all(RolloutLogSettings(tmp_path).logged(step) for step in range(1, 11))  # every: 1, all


def test_each_rounds_records_are_written_at_the_log_step_each_group_marked(tmp_path):
    """Under dynamic sampling the log step writes a step's rounds once the groups trained are
    known: every record says whether its (round, group) was trained."""
    log = RolloutLog(RolloutLogSettings(tmp_path / "rollouts", stage="main"))
    made = {0: [{"step": 6, "round": 0, "group": 0}, {"step": 6, "round": 0, "group": 1}],
            1: [{"step": 6, "round": 1, "group": 0}]}
    log.records = lambda batch, round_, processes: [dict(r) for r in made[round_.index]]  # (gathers need processes)
    rounds = [Round(0, [], {}, {}), Round(1, [], {}, {})]
    log.log(Batch(5, [], ["a"], [1.0], 1, rounds=rounds, picks=[(0, 1), (1, 0)]), ONE)
    rows = rollout_log.read(tmp_path).to_pylist()
    assert [(r["round"], r["group"], r["trained"]) for r in rows] == [(0, 0, False), (0, 1, True), (1, 0, True)]
    assert [p.name for _, p in rollout_log.files(tmp_path / "rollouts")] == ["step-000006.parquet",
                                                                            "step-000006-1.parquet"]
    log.log(Batch(5, [], ["a"], [1.0], 1, rounds=rounds[:1]), ONE)  # no dynamic sampling: unmarked
    assert "trained" not in rollout_log.read(tmp_path / "rollouts" / "step-000006.parquet").to_pylist()[0]


# ------------------------------------------------------------------ the non-finite guard


def test_guard_settings_make_the_guard():
    """10 trainable of 1010 weights (under 10 %): "auto" keeps a snapshot."""
    params = [torch.zeros(10, requires_grad=True), torch.zeros(1000)]
    guard = Guard.of(GuardSettings(policy="skip", max_skips=2, max_jump=0.0), params)
    assert guard.keeps_snapshot and guard.policy == "skip" and guard.max_skips == 2 and guard.max_jump == 0.0
    assert len(guard.params) == 1  # the trainable ones
    assert not Guard.of(GuardSettings(snapshot=False), params).keeps_snapshot
    # 10 of 20 weights is over 10 %, but their 40 bytes fit in 1 GiB: kept
    assert Guard.of(GuardSettings(), [torch.zeros(10, requires_grad=True), torch.zeros(10)]).keeps_snapshot


def test_skip_drops_updates_until_max_skips_in_a_row_and_reports_each_once():
    guard = Guard.of(GuardSettings(policy="skip", max_skips=2), [torch.ones(3, requires_grad=True)])
    assert guard.before_update(torch.tensor(1.0), step=1, lr=0.1)  # finite: applied
    assert not guard.before_update(torch.tensor(math.nan), step=2, lr=0.1)
    assert guard.stop is None and [e.step for e in guard.unreported()] == [2]
    assert guard.unreported() == []  # handed out once
    assert not guard.before_update(torch.tensor(math.inf), step=3, lr=0.1)
    assert guard.stop is not None and guard.stop.step == 3 and guard.stop.metric == "grad_norm"
    assert [(e.step, e.weights_of) for e in guard.unreported()] == [(3, 2)]  # dropped: weights as step 2 left them


# ------------------------------------------------------------------ exact resume


def test_the_buffer_is_saved_only_inside_one():
    """4 micro-steps per generation buffer: micro-steps 1-3, 5-7, ... are inside one."""
    r = ExactResume(ResumeSettings(), every=4)
    assert [s for s in range(9) if r.mid_buffer(s)] == [1, 2, 3, 5, 6, 7]
    assert not any(ExactResume(ResumeSettings(), every=1).mid_buffer(s) for s in range(9))  # no buffer to be inside


class _Stream:
    def __init__(self):
        self.saved, self.loaded = [], []

    def save(self, folder):
        self.saved.append(folder)

    def load(self, folder):
        self.loaded.append(folder)
        return True


def test_a_checkpoint_holds_the_buffer_the_settings_and_the_streams_and_gives_them_back(tmp_path):
    folder = tmp_path / "checkpoint-3"
    folder.mkdir()
    stream = _Stream()
    saver = ExactResume(ResumeSettings({"learning_rate": 0.001}), every=2, rank=1, states=[stream])
    saver.save(folder, micro_step=3, buffered=[{"x": torch.tensor([1, 2])}], main=True)
    assert sorted(p.name for p in folder.iterdir()) == ["grpo_buffer-rank1.pt", "grpo_settings.json"]
    assert stream.saved == [folder]

    resumed = ExactResume(ResumeSettings(), every=2, rank=1, states=[stream])
    assert resumed.restore(3) is None  # not resuming
    resumed.start(True)  # TRL's "the last checkpoint": not a folder, nothing of ours to restore
    assert resumed.resume_dir is None
    resumed.start(str(folder))
    assert resumed.restore(4) is None and stream.loaded == [folder]  # at a buffer's start: TRL generates anew
    assert resumed.restore(3)[0]["x"].tolist() == [1, 2]

    other = tmp_path / "checkpoint-4"
    other.mkdir()
    ExactResume(ResumeSettings({"learning_rate": 0.001}), every=2, states=[stream]).save(other, 4, ["b"], main=False)
    assert list(other.iterdir()) == []  # a buffer's start, and not the main process


def test_the_configured_learning_rate_replaces_the_checkpoints_on_its_schedule():
    """Restored: base 1e-3, halved each step, at step 2. Configured 0.1: 0.1 x 0.5^2 = 0.025."""
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5 ** epoch)
    opt.step()
    sched.step()
    opt.step()
    sched.step()
    take_learning_rate(sched, opt, 0.1)
    assert sched.base_lrs == [0.1] and opt.param_groups[0]["initial_lr"] == 0.1
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025) and sched.get_last_lr() == pytest.approx([0.025])
    take_learning_rate(sched, opt, 0.1)  # already the configured rate: untouched
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)


# ------------------------------------------------------------------ fast sampling


def _config():
    return types.SimpleNamespace(remove_invalid_values=False, cache_implementation=None, disable_compile=True,
                                 max_cache_len=None, compile_config=None)


def test_fast_sampling_sizes_the_static_cache_by_prompt_bucket():
    config = _config()
    sampler = FastSampling(Sampling(fast=True), config, max_completion_length=8)
    assert (config.cache_implementation, config.disable_compile, config.remove_invalid_values) == ("static", False, True)
    sampler.size_cache([[0] * 3, [0] * 130])  # 130 tokens: two buckets of 128, + 8
    assert config.max_cache_len == 264
    sampler.size_cache([[0] * 5])  # a shorter batch keeps the cache (and the compiled decoder)
    assert config.max_cache_len == 264


def test_fast_sampling_falls_back_to_eager_once_with_one_warning():
    config, said, calls = _config(), [], []

    def generate():
        calls.append(config.cache_implementation)
        if len(calls) == 1:
            raise RuntimeError("no such backend\nmore")
        return "sampled"

    sampler = FastSampling(Sampling(fast=True), config, max_completion_length=8, log=said.append)
    assert sampler.sample(generate, [[1, 2]], "cpu") == "sampled"
    assert calls == ["static", None] and not sampler.fast and config.disable_compile is True
    assert len(said) == 1 and "RuntimeError: no such backend)" in said[0]
    with pytest.raises(ValueError):  # eager sampling's own errors are not caught
        sampler.sample(lambda: (_ for _ in ()).throw(ValueError("x")), [[1]], "cpu")


def test_with_vllm_nothing_changes_and_on_a_cpu_sampling_uses_its_threads():
    config = _config()
    assert not FastSampling(Sampling(fast=True), config, 8, vllm=True).fast
    assert (config.cache_implementation, config.remove_invalid_values) == (None, False)
    before = torch.get_num_threads()
    sampler = FastSampling(Sampling(threads=1, autocast="bfloat16"), _config(), 8)
    assert sampler.sample(torch.get_num_threads, [[1]], "cpu") == 1
    assert sampler.sample(lambda: torch.is_autocast_enabled("cuda"), [[1]], "cpu") is False
    # on a CPU the sampling autocast is the CPU's (precision.sampling_autocast decides whether there is one)
    assert sampler.sample(lambda: (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")), [[1]],
                          "cpu") == (True, torch.bfloat16)
    assert torch.get_num_threads() == before and not torch.is_autocast_enabled("cpu")
    plain = FastSampling(Sampling(threads=1), _config(), 8)
    assert plain.sample(lambda: torch.is_autocast_enabled("cpu"), [[1]], "cpu") is False


# ------------------------------------------------------------------ rewards: the failure policy, environments' columns


def test_policy_settings_guard_our_rewards_and_those_trl_adds():
    def own(completions, **kw):
        return [1.0] * len(completions)

    def env_reward(completions, **kw):
        return [0.0] * len(completions)

    policy = PolicySettings(window=3, max_share=0.5, stalls=Stalls(2, "drop"), time_limit=9.0)
    [guarded] = policy.guard([own], log=print)
    assert isinstance(guarded, GuardedReward) and guarded.history.maxlen == 3 and guarded.max_share == 0.5
    assert guarded.stalls == Stalls(2, "drop") and guarded.time_limit is None  # ours carry their own limit
    funcs = [guarded, env_reward]
    policy.guard_added(funcs, ["own", "calculator"], own=1)
    assert funcs[0] is guarded and isinstance(funcs[1], GuardedReward)
    assert funcs[1].__name__ == "calculator" and funcs[1].time_limit == 9.0 and funcs[1].history.maxlen == 3
    assert funcs[1](completions=["a", "b"]) == [0.0, 0.0]


def test_an_environments_column_gets_its_registered_name_and_weight():
    class Calculator:
        def get_reward(self):
            return 1.0

    class Browser:  # no get_reward: no column
        pass

    names, weights = ["digits", "short", "Calculator"], torch.tensor([1.0, 0.5, 1.0])
    name_columns({"calc": [Calculator()], "web": [Browser()]}, [None] * 3, names, weights,
                 {"calc": ("calculator", 0.25), "web": ("browser", 9.0)})
    assert names == ["digits", "short", "calculator"] and weights.tolist() == [1.0, 0.5, 0.25]
    names = ["digits", "Calculator"]
    weights = [1.0, 1.0]
    name_columns({"r1": [Calculator()], "r2": [Calculator()]}, [None] * 2, names, weights, {"r2": ("calc", 2.0)})
    assert names == ["digits", "calc"] and weights == [1.0, 2.0]  # two routes, one class: one column


# ------------------------------------------------------------------ the builder: settings from the config, one place


def test_features_are_read_from_the_config_in_one_place(toy_plugin, tiny_model, tmp_path):
    from grpo_core.config.load import load_config
    from grpo_core.config.precision import Precision
    from grpo_core.run.builder import features_of
    from grpo_core.run.prepare import prepare

    from .conftest import TINY

    cfg = load_config(TINY, ["--model.id", str(tiny_model), "--output_dir", str(tmp_path / "out"),
                             "--sampling.dynamic", "true", "--sampling.max_rounds", "4", "--log.rollouts", "2",
                             "--health.on_nonfinite", "skip", "--health.max_skips", "3",
                             "--health.reward_time_limit", "30", "--model.generation_threads", "2"])
    p = prepare(cfg, check=False, tools=False)
    f = features_of(p, p.plans[0], precision=Precision("bfloat16", "bfloat16", "bfloat16"), offset=7)
    assert f.sampling == Sampling(fast=False, threads=2, autocast="bfloat16", merged="auto")  # a CPU: fast is CUDA's (auto), merging the CPU's
    assert f.guard == GuardSettings("skip", "auto", 3, 100.0)
    assert f.rewards == PolicySettings(5, 0.2, Stalls(3, "stop"), 30.0)
    assert f.dynamic == DynamicSettings(4, "total")
    assert f.rollout_log == RolloutLogSettings(tmp_path / "out" / "rollouts", 2, "main", 7)
    assert f.rollout_log.index["What is 0 + 1?"] == 0
    assert f.resume.record["learning_rate"] == 1e-3 and f.resume.record["sampling"]["max_rounds"] == 4
    assert f.trainable == "bfloat16" and f.environment_rewards == {}
    sampling_only = features_of(p, p.plans[0], precision=Precision("bfloat16", "bfloat16", "bfloat16"),
                                rollouts_only=True)
    assert (sampling_only.rewards, sampling_only.dynamic, sampling_only.rollout_log, sampling_only.resume.record,
            sampling_only.trainable) == (None, None, None, None, None)
    assert sampling_only.guard == f.guard and sampling_only.sampling.threads == 2


def test_under_dynamic_sampling_the_logged_figures_are_the_trained_batchs():
    # two rewards (weights 1 and 0.5), groups of 2, two rounds of two groups each:
    # round 0: group 0 totals [1, 0] (spread), group 1 [2, 2] (flat, dropped)
    # round 1: group 0 totals [0.5, 1.5] (spread), group 1 [0, 0] (flat, dropped)
    scores = [{"a": [1, 0, 1, 1], "b": [0, 0, 2, 2]}, {"a": [0, 1, 0, 0], "b": [1, 1, 0, 0]}]
    trained = trained_scores(scores, ["a", "b"], [(0, 0), (1, 0)], 2)
    assert trained == {"a": [1.0, 0.0, 0.0, 1.0], "b": [0.0, 0.0, 1.0, 1.0]}
    figures = trained_figures(trained, [1.0, 0.5], 2)
    # trained totals [1, 0, 0.5, 1.5]: mean 0.75, sample std sqrt(1.25 / 3); no flat group trained
    assert figures["reward"] == pytest.approx(0.75)
    assert figures["reward_std"] == pytest.approx((1.25 / 3) ** 0.5)
    assert figures["frac_reward_zero_std"] == 0.0
    assert figures["rewards/a/mean"] == pytest.approx(0.5) and figures["rewards/b/mean"] == pytest.approx(0.5)
    assert figures["rewards/a/std"] == pytest.approx((1 / 3) ** 0.5)
    # what TRL logged per round (totals' means 1.25 and 0.5, half the groups flat in each) is replaced by the
    # trained batch's figure; an earlier batch's entry (9.0) stays; the rounds' mean is kept apart, labelled
    logged = defaultdict(list, {"reward": [9.0, 1.25, 0.5], "frac_reward_zero_std": [0.5, 0.5]})
    relog(logged, {"reward": 1, "frac_reward_zero_std": 0}, figures)
    assert logged["reward"] == [9.0, 0.75] and logged["frac_reward_zero_std"] == [0.0]
    assert logged["sampling/all_rounds/reward"] == [0.875]
    assert logged["sampling/all_rounds/frac_reward_zero_std"] == [0.5]


def test_a_row_no_reward_scored_has_no_total_as_in_trl():
    """Group [None/None, 1/1]: the first row is unscored (NaN, not 0): the group's one
    total has no spread to measure (NaN std, not counted flat), the mean is 1.5."""
    figures = trained_figures({"a": [math.nan, 1.0], "b": [math.nan, 1.0]}, [1.0, 0.5], 2)
    assert figures["reward"] == pytest.approx(1.5) and figures["frac_reward_zero_std"] == 0.0
