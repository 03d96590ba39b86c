"""Torch's CPU threads on a shared machine (trainer/threads.py): the wait policy set
before torch loads, and ``model.generation_threads: auto``, sampling on the cores other
processes leave idle. The step times themselves are bench/contention.py's."""

from __future__ import annotations

import pytest
import torch

from grpo_core.trainer.decoding import FastSampling, Sampling
from grpo_core.trainer.threads import CoreMeter, _cpu_ticks, auto_threads, threads_for


@pytest.mark.parametrize("cores, others, ceiling, expected", [
    (2, 0.0, 2, 2),    # alone: torch's own threads
    (2, 0.05, 2, 2),   # background noise (kernel threads, a shell) leaves both cores
    (2, 1.0, 2, 1),    # one busy process on 2 cores: one thread, a core to itself
    (2, 0.4, 2, 2),    # 1.6 cores idle: a core counts when at least half of it is idle
    (2, 0.6, 2, 1),    # 1.4 idle
    (2, 2.0, 2, 1),    # every core busy: still one thread, never none
    (2, 9.0, 2, 1),
    (16, 3.2, 8, 8),   # 12.8 idle, but never more than torch's own (OMP_NUM_THREADS, set_num_threads)
    (16, 10.0, 8, 6),
    (4, 1.5, 4, 3),    # 2.5 idle: the half core counts
    (2, 0.0, 1, 1),    # torch on 1 thread stays there
])
def test_threads_are_the_cores_other_processes_leave_idle(cores, others, ceiling, expected):
    assert threads_for(cores, others, ceiling) == expected


def test_the_meter_counts_busy_ticks_less_this_process_own_time():
    """2 cores at 100 ticks/s; each reading: (busy, total) ticks of the cores, and this
    process's CPU seconds."""
    readings = iter([(1000, 4000), (1150, 4200), (1250, 4400), (1250, 4600)])
    own = iter([10.0, 10.5, 11.5, 11.5])
    slept = []
    meter = CoreMeter(ticks=lambda cores: next(readings), own=lambda: next(own), sleep=slept.append,
                      cores={0, 1}, hz=100)
    # 1 s (100 ticks a core): 150 busy ticks, 50 of them this process's -> others kept 1 core busy
    assert meter.others() == pytest.approx(1.0)
    assert len(slept) == 1 and 0.1 < slept[0] <= 0.2  # the first reading waits for a window of 0.2 s
    # next second: 100 busy ticks, all this process's (1 s) -> nobody else; then an idle second
    assert meter.threads(2) == 2
    assert meter.others() == pytest.approx(0.0)


def test_where_the_meter_cannot_read_the_cores_sampling_keeps_torch_threads():
    meter = CoreMeter(ticks=lambda cores: None, sleep=lambda s: None, cores={0, 1})
    assert meter.others() is None and meter.threads(2) == 2


def test_proc_stat_is_read_for_the_cores_this_process_may_run_on(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  30 0 30 300 10 0 0 0 0 0\n"
                    "cpu0 10 0 20 100 5 0 0 0 0 0\n"   # user nice system idle iowait irq softirq steal ...
                    "cpu1 20 1 10 200 5 2 3 4 0 0\n"
                    "intr 123 4 5\n")
    # cpu1: busy = 20 + 1 + 10 + 2 + 3 + 4 = 40 (idle and iowait are not), total = 245
    assert _cpu_ticks({1}, str(stat)) == (40, 245)
    assert _cpu_ticks({0, 1}, str(stat)) == (30 + 40, 135 + 245)
    assert _cpu_ticks({0}, str(tmp_path / "missing")) is None


@pytest.mark.parametrize("setting, environ, expected", [
    ("auto", {}, "auto"),
    ("auto", {"OMP_NUM_THREADS": "2"}, None),  # the user fixed the count: torch's own, which is theirs
    ("auto", {"MKL_NUM_THREADS": "1"}, None),
    (3, {"OMP_NUM_THREADS": "2"}, 3),          # a number in the config is the number
    (None, {}, None),
])
def test_auto_keeps_a_thread_count_the_user_set(setting, environ, expected):
    assert auto_threads(setting, environ) == expected


class Meter:
    """A meter that says ``n`` threads and counts how often it is read."""

    def __init__(self, n: int):
        self.n, self.reads = n, 0

    def threads(self, ceiling: int) -> int:
        self.reads += 1
        return min(self.n, ceiling)


def test_auto_samples_on_the_meters_threads_and_says_so_once():
    said, before = [], torch.get_num_threads()
    sampler = FastSampling(Sampling(threads="auto"), _config(), 8, log=said.append)
    assert isinstance(sampler.meter, CoreMeter)
    sampler.meter = Meter(before)
    assert sampler.sample(torch.get_num_threads, [[1]], "cpu") == before and said == []
    if before == 1:
        pytest.skip("torch runs on 1 thread here: auto cannot go lower")
    sampler.meter = Meter(1)
    assert sampler.sample(torch.get_num_threads, [[1]], "cpu") == 1
    assert sampler.sample(torch.get_num_threads, [[1]], "cpu") == 1
    assert len(said) == 1 and f"training on 1 of torch's {before} threads" in said[0]
    assert torch.get_num_threads() == before  # put back after each generation


def test_a_training_step_runs_on_the_threads_chosen_at_its_start():
    """Beside a busy process the whole step (sampling, loss, backward) runs on one thread,
    chosen once: its sampling does not read the meter again (the meter's window would be
    the few milliseconds since the step began)."""
    before = torch.get_num_threads()
    if before == 1:
        pytest.skip("torch runs on 1 thread here: auto cannot go lower")
    sampler = FastSampling(Sampling(threads="auto"), _config(), 8, log=lambda m: None)
    sampler.meter = Meter(1)
    with sampler.step_threads("cpu"):
        in_loss = torch.get_num_threads()  # what the loss and the backward pass run on
        in_sampling = sampler.sample(torch.get_num_threads, [[1]], "cpu")
    assert (in_loss, in_sampling, sampler.meter.reads) == (1, 1, 1)
    assert torch.get_num_threads() == before  # torch's own threads after the step
    with sampler.step_threads("cuda"):  # on a GPU the CPU threads are left alone
        assert torch.get_num_threads() == before
    fixed = FastSampling(Sampling(threads=1), _config(), 8, log=lambda m: None)
    with fixed.step_threads("cpu"):  # a number is sampling's alone: the step keeps torch's own
        assert torch.get_num_threads() == before


def test_grpo_train_runs_each_step_on_the_threads_auto_chose(train, monkeypatch):
    """The trainer wires it in: with the meter saying 1 thread, every loss of a real (tiny)
    run is computed on 1 thread, where torch's own are more."""
    from grpo_core.trainer import threads as threads_module
    from grpo_core.trainer.trainer import GrpoTrainer

    before = torch.get_num_threads()
    if before == 1:
        pytest.skip("torch runs on 1 thread here: auto cannot go lower")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # else auto keeps the user's count
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads_module.CoreMeter, "threads", lambda self, ceiling: 1)
    seen, real = [], GrpoTrainer._compute_loss

    def watched(self, model, inputs):
        seen.append(torch.get_num_threads())
        return real(self, model, inputs)

    monkeypatch.setattr(GrpoTrainer, "_compute_loss", watched)
    train()
    assert seen and set(seen) == {1}, seen
    assert torch.get_num_threads() == before


def _config():
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=8)


def _scores_at(model, threads: int, reproducible: bool):
    """The tiny model's sampling scores (and tokens) inside the trainer's CPU sampling
    context, on ``threads`` torch threads."""
    from transformers import GenerationConfig

    sampler = FastSampling(Sampling(threads=threads, reproducible=reproducible),
                           GenerationConfig(do_sample=True, max_new_tokens=24, min_new_tokens=24, pad_token_id=0), 24)
    ids = torch.arange(3, 3 + 8 * 20).remainder(100).view(8, 20)
    torch.manual_seed(0)
    with torch.no_grad(), sampler.context("cpu"):
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=sampler.config,
                             output_scores=True, return_dict_in_generate=True)
    return out.sequences, torch.stack(out.scores)


def test_sampling_computes_the_same_numbers_at_one_thread_and_at_two(tiny_model):
    """model.reproducible (the default): what auto's thread count changes is speed, never the
    numbers. Without it torch's flash attention sums each decoded token's attention in an
    order that follows the thread count (the quickstart's seed 0 gave 0.484 and 0.672)."""
    from grpo_core.trainer.generation import load_policy

    model, _ = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    one, two = _scores_at(model, 1, True), _scores_at(model, 2, True)
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])
    flash_one, flash_two = _scores_at(model, 1, False), _scores_at(model, 2, False)
    assert not torch.equal(flash_one[1], flash_two[1])  # the kernel it steps around does differ


def test_a_seeded_run_is_the_same_run_at_one_thread_and_at_two(train, tmp_path):
    """Two steps of the tiny model, each step on 1 thread and then on 2 (what auto picks
    beside a busy process and alone): the same logged figures and the same weights."""
    import json

    from safetensors.torch import load_file

    runs = {}
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        train("--model.generation_threads", str(threads), "--max_steps", "3", out=out)
        lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
        figures = [{k: v for k, v in line.items() if "time" not in k and "second" not in k and "elapsed" not in k}
                   for line in lines]
        runs[threads] = figures, load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert runs[1][0] == runs[2][0]
    assert runs[1][1].keys() == runs[2][1].keys()
    assert all(torch.equal(runs[1][1][k], runs[2][1][k]) for k in runs[1][1])
