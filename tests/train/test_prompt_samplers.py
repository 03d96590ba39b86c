"""The prompt sampler seam (``sampling.prompts``) in real training runs: a plugin's sampler
trains on the prompts it chose, TRL's own sampler stays the default and unchanged, frontier
logs its figures on the step line and in metrics.jsonl, and --resume after a kill continues
its curriculum at the difficulty the uninterrupted run reached."""

from __future__ import annotations

import json
import types

import pytest

import grpo_core
from grpo_core.data.difficulty import Difficulty
from grpo_core.trainer import rollout_log

from .conftest import INTERRUPT, TINY


class FirstRows:
    """A third party's sampler: always the training set's first prompts."""

    def __init__(self, offset: int):
        self.offset = offset
        self.seen: list[tuple[list[int], list[list[float]]]] = []

    def choose(self, pool, n, proposed):
        return [self.offset + i for i in range(n)]

    def observe(self, rows, passed):
        self.seen.append((list(rows), [list(p) for p in passed]))

    def metrics(self):
        return {"acme_rows": float(len(self.seen))}


SAMPLER = {}


def first_rows(offset: int = 0) -> FirstRows:
    SAMPLER["made"] = FirstRows(offset)
    return SAMPLER["made"]


class Echo:
    """TRL's own draw, through the whole seam (choose, observe, its figures)."""

    def choose(self, pool, n, proposed):
        return list(proposed)

    def observe(self, rows, passed):
        pass


def leveled(split: str = "train", size: int = 24):
    """'Level L: what is i + 1?' with level 1, 2, 3 in turn (column ``level``, declared)."""
    from datasets import Dataset

    return Dataset.from_dict({"question": [f"Level {1 + i % 3}: what is {i} + 1?" for i in range(size)],
                              "answer": [str(i + 1) for i in range(size)],
                              "level": [1 + i % 3 for i in range(size)]})


leveled.difficulty = Difficulty("level")


def passes(completions, level, **kwargs):
    """A correctness reward by level: level 1 always right, level 3 never, level 2 right when
    the completion's length is even (a spread that depends on what was sampled)."""
    out = []
    for c, lv in zip(completions, level):
        out.append({1: 1.0, 3: 0.0}.get(lv, float(len(grpo_core.completion_text(c)) % 2 == 0)))
    return out


@pytest.fixture
def samplers(register_plugin):
    mod = types.ModuleType("acme_samplers")

    @grpo_core.hookimpl
    def register_samplers(register):
        register("acme.first", first_rows, description="the first prompts, always")
        register("acme.echo", lambda: Echo(), description="TRL's draw")

    @grpo_core.hookimpl
    def register_datasets(register):
        register("leveled", leveled)

    @grpo_core.hookimpl
    def register_rewards(register):
        register("test.passes", passes, correctness=True)

    mod.register_samplers, mod.register_datasets, mod.register_rewards = (register_samplers, register_datasets,
                                                                          register_rewards)
    register_plugin(mod, name="acme_samplers")


def metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def trained_prompts(out) -> list[str]:
    return sorted({r["prompt"] for r in rollout_log.read(out).to_pylist()})


# two prompts of 4 completions a step; test.exact is the correctness reward
RUN = ("--rewards", "test.exact", "test.short:0.5", "--no-check", "--heldout.enabled", "false", "--per_device_train_batch_size", "8",
       "--max_steps", "2")


def test_a_plugins_sampler_trains_on_the_prompts_it_chose(grpo, samplers, tmp_path):
    code, out, err = grpo(TINY, *RUN, "--sampling.prompts", "acme.first(offset=5)")
    assert code == 0, out + err
    assert trained_prompts(tmp_path / "out") == ["What is 5 + 1?", "What is 6 + 1?"]
    made = SAMPLER["made"]  # it saw each batch's groups: its rows and their pass scores (test.exact: 0 or 1)
    assert [rows for rows, _ in made.seen] == [[5, 6], [5, 6]]
    assert all(len(p) == 4 and set(p) <= {0.0, 1.0} for _, passed in made.seen for p in passed)
    assert [m["prompts/acme_rows"] for m in metrics(tmp_path / "out") if "loss" in m] == [1.0, 2.0]


def test_trls_own_sampler_is_the_default_and_the_seam_changes_no_number(grpo, samplers, tmp_path):
    """The default run logs no prompts/ figure; a sampler handing back TRL's own draw through
    the whole seam trains the same prompts to the same rewards and loss."""
    runs = {}
    for name, flags in (("default", ()), ("trl", ("--sampling.prompts", "trl")),
                        ("echo", ("--sampling.prompts", "acme.echo"))):
        code, out, err = grpo(TINY, *RUN, *flags, out=tmp_path / name)
        assert code == 0, out + err
        runs[name] = [{k: v for k, v in m.items()  # (the rewards' timings differ run to run: left out)
                       if k.startswith(("loss", "reward", "rewards/")) and not k.endswith("/seconds")}
                      for m in metrics(tmp_path / name) if "loss" in m]
        assert trained_prompts(tmp_path / name) == trained_prompts(tmp_path / "default")
    assert not any(k.startswith("prompts/") for m in metrics(tmp_path / "default") for k in m)
    assert runs["default"] == runs["trl"] == runs["echo"] and len(runs["default"]) == 2


def test_frontier_logs_its_figures_and_the_step_line_shows_them(grpo, samplers, tmp_path):
    code, out, err = grpo(TINY, "--dataset.name", "leveled", "--rewards", "test.passes", "test.short:0.5",
                          "--no-check", "--heldout.enabled", "false", "--per_device_train_batch_size", "8",
                          "--max_steps", "2",
                          "--sampling.prompts", "frontier(step=0.5)")
    assert code == 0, out + err
    assert "frontier: difficulty from dataset 'leveled' column 'level' (1 to 3, 3 values), starting at 1" in out
    steps = [m for m in metrics(tmp_path / "out") if "loss" in m]
    # step 1: two level-1 prompts, every completion right: observed 1.0, every group flat, and the
    # difficulty moves 0.5 * (3 - 1) * tanh(2 * 0.5) = 0.7616 up, from 1
    assert steps[0]["prompts/observed_pass"] == 1.0 and steps[0]["prompts/flat_share"] == 1.0
    assert steps[0]["prompts/expected_pass"] == 0.5  # nothing seen yet: Beta(1, 1)
    assert steps[0]["prompts/difficulty"] == pytest.approx(1.76159, abs=1e-5)
    assert all(p.startswith("Level 1:") for p in trained_prompts(tmp_path / "out")[:1])
    line = next(x for x in out.splitlines() if x.startswith("step 1/2"))
    assert "difficulty 1.76 | pass expected 0.50 observed 1.00 | flat 1.00" in line


def test_frontier_on_a_dataset_without_a_knob_goes_by_the_estimates(grpo, samplers, tmp_path):
    code, out, err = grpo(TINY, *RUN, "--sampling.prompts", "frontier")
    assert code == 0, out + err
    assert "frontier: dataset 'toy' declares no difficulty; prompts are chosen by their pass-rate estimates alone " \
           "(target 0.5)." in out
    steps = [m for m in metrics(tmp_path / "out") if "loss" in m]
    # test.exact on a tiny random model: nothing right, every group all wrong
    assert [(m["prompts/observed_pass"], m["prompts/flat_share"]) for m in steps] == [(0.0, 1.0), (0.0, 1.0)]
    assert not any("prompts/difficulty" in m for m in steps)


def test_a_kill_and_resume_reaches_the_difficulty_of_the_uninterrupted_run(train, samplers, tmp_path):
    args = ("--dataset.name", "leveled", "--rewards", "test.passes", "test.short:0.5", "test.interrupt:0",
            "--per_device_train_batch_size", "8", "--max_steps", "6", "--sampling.prompts", "frontier(step=0.5)",
            "--heldout.enabled", "false")
    assert train(*args, out=tmp_path / "whole", check=False)[0].exit_code == 0
    INTERRUPT.update(at_call=3, calls=0)  # Ctrl-C in step 3's scoring: step 3 ends, checkpoint-3
    result, _ = train(*args, out=tmp_path / "cut", check=False)
    assert result.exit_code == 130 and result.global_step == 3
    assert (tmp_path / "cut" / "checkpoint-3" / "grpo_prompts.json").is_file()
    INTERRUPT.update(at_call=None)
    result, lines = train(*args, out=tmp_path / "cut", check=False, resume=True)
    assert result.exit_code == 0 and result.global_step == 6, lines

    def curve(name):
        return {m["step"]: (m["prompts/difficulty"], m["prompts/observed_pass"])
                for m in metrics(tmp_path / name) if "loss" in m}

    whole = curve("whole")
    assert sorted(whole) == [1, 2, 3, 4, 5, 6] and curve("cut") == whole
    assert len({d for d, _ in whole.values()}) > 2  # the curriculum moved: agreeing is no accident


@pytest.mark.parametrize("flags, says", [
    (("--sampling.prompts", "frontier(target=1)"),
     "sampling.prompts 'frontier(target=1)': frontier's target is 1: that chooses only groups expected all right, "
     "flat groups that teach nothing; give a pass rate strictly between 0 and 1 (0.5: groups half right)."),
    (("--sampling.prompts", "frontier(target=0)"), "frontier's target is 0: that chooses only groups expected all wrong"),
    (("--sampling.prompts", "fronteir"), "unknown prompt sampler 'fronteir'. Closest registered: frontier."),
    (("--sampling.prompts", "frontier", "--rewards", "test.short"),
     "sampling.prompts 'frontier' reads pass rates on a correctness reward, but stage"),
])
def test_a_sampler_setting_that_cannot_work_is_refused_before_the_model_loads(grpo, tmp_path, flags, says):
    code, out, err = grpo(TINY, *flags, model=False)
    assert code == 2 and says in err, out + err
    assert not (tmp_path / "out").exists()


def test_samplers_list_shows_the_builtins_and_a_plugins_samplers_with_their_parameters(samplers, capsys):
    from grpo_core.cli import main

    assert main(["samplers", "list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: " ".join(line.split()) for line in out.splitlines()[2:] if line.strip()}
    assert list(rows)[:4] == ["acme.echo", "acme.first", "frontier", "trl"]
    assert rows["acme.first"].startswith("acme.first offset: int = 0 - the first prompts, always")
    assert rows["frontier"].startswith("frontier target: float = 0.5, knob: bool | str = 'auto', step: float = 0.1")
    assert rows["trl"].startswith("trl - grpo-core TRL's own sampler")
    assert main(["samplers", "list", "--json"]) == 0
    listed = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
    assert listed["acme.first"]["plugin"] == "acme_samplers" and listed["acme.first"]["parameters"] == ["offset: int = 0"]


def test_an_unknown_sampler_points_to_the_command_that_lists_them():
    from grpo_core.plugin import registry

    with pytest.raises(grpo_core.UnknownNameError) as info:
        registry.samplers().get("frontire")
    assert str(info.value) == ("unknown prompt sampler 'frontire'. Closest registered: frontier. "
                               "List them with `grpo samplers list`.")


def test_samplers_list_imports_neither_torch_nor_trl():
    import subprocess
    import sys

    code = ("import sys; from grpo_core.cli import main\n"
            "rc = main(['samplers', 'list'])\n"
            "print('HEAVY', [m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules], rc,"
            " file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY [] 0" in out.stderr, out.stderr
