"""Learning methods (``learning.method``): how a scored batch becomes advantages, and what
each generated token bought. Values worked out by hand on small batches; end to end, the
loss TRL logs checked against the entropy TRL logs on the same batch."""

from __future__ import annotations

import json
import math
import types

import pytest
import torch

import grpo_core
from grpo_core.runfiles.metrics import run_tokens, summary
from grpo_core.trainer import rollout_log
from grpo_core.trainer.batch import Batch, Round
from grpo_core.trainer.chain import EXTRA, Chain, LearningSettings, Tokens
from grpo_core.trainer.methods.base import Scored

from .conftest import TINY

# ------------------------------------------------------------------ the methods, by hand


def scored(correct, advantages=None, group=2, **kw) -> Scored:
    n = len(correct)
    adv = torch.zeros(n) if advantages is None else torch.tensor(advantages, dtype=torch.float32)
    return Scored({"c": torch.tensor(correct, dtype=torch.float32)}, [1.0], adv, group, metric="c", **kw)


def method(name: str, **params):
    return LearningSettings(name, params).build()


def test_verdicts_say_which_groups_are_all_right_or_all_wrong():
    # groups of 2: right-right, wrong-wrong, right-wrong, right-unscored, half-half (a partial score)
    s = scored([1, 1, 0, 0, 1, 0, 1, math.nan, 0.5, 0.5])
    assert s.verdicts().tolist() == [1, 1, -1, -1, 0, 0, 0, 0, 0, 0]


def test_an_unscored_completion_is_neither_right_nor_wrong():
    # groups of 2: wrong-unscored, unscored-unscored, unscored-right. An unscored one counted as wrong
    # would make the first an all-wrong group (-1): sign and zvp would push a completion nobody judged
    s = scored([0, math.nan, math.nan, math.nan, math.nan, 1])
    assert s.verdicts().tolist() == [0, 0, 0, 0, 0, 0]
    # on a reward's own scale (wrong is -1): unscored is still neither
    s = scored([-1, math.nan, 2, math.nan], right=2.0, wrong=-1.0)
    assert s.verdicts().tolist() == [0, 0, 0, 0]
    out = method("sign").rows(scored([0, math.nan, 0, 0], [0.0, 0.0, 0.0, 0.0]))
    assert out.rows.tolist() == pytest.approx([0.0, 0.0, -0.1, -0.1])  # only the all-wrong group moves


def test_verdicts_read_the_rewards_own_scale():
    s = scored([2, 2, -1, -1, 2, -1], right=2.0, wrong=-1.0)
    assert s.verdicts().tolist() == [1, 1, -1, -1, 0, 0]


def test_grpo_returns_trls_advantages_unchanged():
    out = method("grpo").rows(scored([1, 0, 1, 1], [0.7, -0.7, 0.0, 0.0]))
    assert out.rows.tolist() == pytest.approx([0.7, -0.7, 0.0, 0.0])
    assert out.teaching().tolist() == [True, True, False, False]


def test_sign_adds_plus_or_minus_scale_to_flat_groups_only():
    # TRL's advantages: group 1 has a spread; groups 2 (all right) and 3 (all wrong) are flat
    out = method("sign", scale=0.25).rows(scored([1, 0, 1, 1, 0, 0], [0.7, -0.7, 0.0, 0.0, 0.0, 0.0]))
    assert out.rows.tolist() == pytest.approx([0.7, -0.7, 0.25, 0.25, -0.25, -0.25])
    assert out.teaching().tolist() == [True] * 6


def test_signs_default_scale_is_a_tenth():
    # sign() with no parameters: scale 0.1 (docs/training.md, the method's signature): +0.1 to an
    # all-right group, -0.1 to an all-wrong one, a group with a spread keeps TRL's
    out = method("sign").rows(scored([1, 1, 0, 0, 1, 0], [0.0, 0.0, 0.0, 0.0, 0.7, -0.7]))
    assert out.rows.tolist() == pytest.approx([0.1, 0.1, -0.1, -0.1, 0.7, -0.7])
    from grpo_core.trainer.methods.sign import sign

    assert sign().scale == 0.1


def test_zvp_shapes_tokens_of_flat_groups_by_their_entropy():
    zvp = method("zvp", alpha=0.1)
    # three completions: of an all-right group, of an all-wrong group, of a group with a spread
    rows = zvp.rows(scored([1, 1, 0, 0, 1, 0], [0.0, 0.0, 0.0, 0.0, 0.5, -0.5]))
    assert rows.shaped.tolist() == [True, True, True, True, False, False]
    assert rows.rows.tolist() == [0.0, 0.0, 0.0, 0.0, 0.5, -0.5]
    pick = [0, 2, 4]  # one completion of each group
    entropies = torch.tensor([[0.5, 1.0, 0.2, 9.0], [0.5, 1.0, 0.2, 9.0], [0.5, 1.0, 0.2, 9.0]])
    mask = torch.tensor([[1, 1, 1, 0]] * 3)  # the last token is padding: its 9.0 is not the max
    out = zvp.tokens(rows.rows[pick], {"verdict": rows.extra["verdict"][pick]}, entropies, mask)
    right = [0.1 * 0.5, 0.1 * 1.0, 0.1 * 0.2]  # alpha * H_t
    wrong = [-0.1 * (1.0 - 0.5), -0.1 * (1.0 - 1.0), -0.1 * (1.0 - 0.2)]  # -alpha * (max_k H_k - H_t)
    assert out[0, :3].tolist() == pytest.approx(right)
    assert out[1, :3].tolist() == pytest.approx(wrong)
    assert out[2, :3].tolist() == pytest.approx([0.5, 0.5, 0.5])  # a spread: GRPO's advantage on every token


def test_zvp_keeps_the_other_rewards_spread_in_a_flat_group():
    zvp = method("zvp", alpha=0.1)
    rows = zvp.rows(scored([1, 1], [0.3, -0.3]))  # flat on correctness, a length reward's spread
    out = zvp.tokens(rows.rows, {"verdict": rows.extra["verdict"]}, torch.tensor([[1.0], [2.0]]),
                     torch.ones(2, 1))
    assert out[:, 0].tolist() == pytest.approx([0.3 + 0.1, -0.3 + 0.2])


def test_a_bad_parameter_is_refused_with_its_value():
    with pytest.raises(ValueError, match="alpha must be above 0, got -1"):
        method("zvp", alpha=-1)
    with pytest.raises(ValueError, match="scale must be a finite number"):
        method("sign", scale=float("inf"))


# ------------------------------------------------------------------ what each token bought


class _Accelerator:
    num_processes, process_index, is_main_process = 1, 0, True

    @staticmethod
    def gather(t):
        return t


class _Trl:
    """What the chain asks of TRL, for one process: one round scored, its rewards given."""

    def __init__(self, rewards, tensors):
        self.rewards, self.tensors = rewards, tensors

    def score(self, inputs, index, reference):
        return Round(index, inputs, self.tensors, {"rewards": {"c": self.rewards}})


def chain_on(method_name: str, rewards, advantages, lengths):
    """The chain's advantages and token figures for a batch whose completions have ``lengths`` tokens."""
    width = max(lengths)
    out = {"advantages": torch.tensor(advantages),
           "completion_mask": torch.tensor([[1] * n + [0] * (width - n) for n in lengths])}
    trl = _Trl(rewards, out)
    chain = Chain(LearningSettings(method_name, {}, "c", 1.0, 0.0), score=trl.score, reference=lambda t: None,
                  processes=_Accelerator())
    logged: dict[str, list] = {}
    batch = chain.batch(Batch(0, [{}] * len(rewards), ["c"], [1.0], 2), logged)  # one round scored, advantages, log
    return logged, batch.tensors


# three groups of 2: all wrong (3 + 2 tokens), a spread (4 + 1), all right (2 + 2); 14 tokens generated
REWARDS, ADVANTAGES, LENGTHS = [0, 0, 1, 0, 1, 1], [0.0, 0.0, 0.7, -0.7, 0.0, 0.0], [3, 2, 4, 1, 2, 2]


def test_tokens_of_flat_groups_teach_nothing_under_grpo():
    logged, out = chain_on("grpo", REWARDS, ADVANTAGES, LENGTHS)
    assert logged["tokens/generated"] == [14.0]
    assert logged["tokens/teaching_share"] == [pytest.approx(5 / 14)]  # the spread group's 4 + 1 tokens
    assert EXTRA + "teaching" not in out  # the figure's column does not reach the loss


def test_under_zvp_every_token_of_a_flat_group_teaches():
    logged, out = chain_on("zvp", REWARDS, ADVANTAGES, LENGTHS)
    assert logged["tokens/teaching_share"] == [1.0]
    assert out[EXTRA + "verdict"].tolist() == [-1, -1, 0, 0, 1, 1]


class _SecondOfTwo:
    """Process 1 of 2: ``gather`` puts process 0's rows (``first``) before this one's, as
    accelerate does."""

    num_processes, process_index = 2, 1

    def __init__(self, first):
        self.first = first

    def gather(self, t):
        return torch.cat([self.first.to(t.dtype), t])


@pytest.mark.parametrize("name, everyone, mine, extra", [
    # process 0: two all-right groups; process 1 (this one): an all-wrong group and a spread
    ("sign", [0.1, 0.1, 0.1, 0.1, -0.1, -0.1, 0.7, -0.7], [-0.1, -0.1, 0.7, -0.7], None),
    ("zvp", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.7, -0.7], [0.0, 0.0, 0.7, -0.7], ("verdict", [-1, -1, 0, 0])),
])
def test_each_process_keeps_its_own_slice_of_every_processs_advantages(name, everyone, mine, extra):
    # the method sees every process's rows; process 1 trains on rows 4-7 (on process 0's, with slice 0,
    # it would push its wrong answers up by +0.1): the two-process run cannot tell, its processes agree
    out = {"advantages": torch.tensor([0.0, 0.0, 0.7, -0.7])}
    batch = Batch(0, [{}] * 4, ["c"], [1.0], 2, tensors=out)
    batch.rounds.append(Round(0, batch.inputs, out, {"rewards": {"c": [1, 1, 1, 1, 0, 0, 1, 0]}}))
    chain = Chain(LearningSettings(name, {}, "c", 1.0, 0.0), score=None, reference=None,
                  processes=_SecondOfTwo(torch.zeros(4)))
    result = chain.advantages(batch).advantages
    assert result.rows.tolist() == pytest.approx(everyone)
    assert out["advantages"].tolist() == pytest.approx(mine)
    assert out[EXTRA + "teaching"].tolist() == [True, True, True, True]  # (process 0's: all four too)
    if extra is not None:
        key, values = extra
        assert result.extra[key].tolist() == [1, 1, 1, 1, -1, -1, 0, 0] and out[EXTRA + key].tolist() == values


def test_the_run_totals_and_the_sentence():
    tokens = Tokens()
    tokens.batch_generated = 14
    assert tokens.figures(5)["teaching_share_total"] == pytest.approx(5 / 14)
    tokens.batch_generated = 6
    second = tokens.figures(6)
    assert (second["generated_total"], second["teaching_share_total"]) == (20.0, pytest.approx(11 / 20))
    rows = [{"tokens/generated": 14, "tokens/teaching_share": 5 / 14}, {"step": 2},
            {"tokens/generated": 12386, "tokens/teaching_share": 0.5}]
    assert run_tokens(rows) == (12400, 6198)
    assert summary(12400, 6198) == ("50% of 12,400 generated completion tokens trained nothing (their advantage "
                                    "was 0); 6,198 taught.")
    assert summary(0, 0) is None


# ------------------------------------------------------------------ end to end


def always(value):
    def reward(completions, **kwargs):
        return [value for _ in completions]
    return reward


@pytest.fixture
def constant_rewards(register_plugin):
    mod = types.ModuleType("constant_plugin")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("test.right", always(1.0), correctness=True, range=(0, 1))
        register("test.wrong", always(0.0), correctness=True, range=(0, 1))

    mod.register_rewards = register_rewards
    register_plugin(mod, name="constant_plugin")


def steps_of(out):
    return [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "loss" in r]


BASE = ("--no-check", "--max_steps", "2", "--learning_rate", "1e-6")


def test_zvp_trains_on_flat_right_groups_through_their_entropy(grpo, constant_rewards, tmp_path):
    # every group all right: TRL's advantage is 0; zvp's is alpha * H_t on each token, and with one
    # update per batch (ratio 1) dapo's loss is -alpha * the mean token entropy TRL logs
    code, out, err = grpo(TINY, "--rewards", "test.right", "--learning.method", "zvp(alpha=0.1)", *BASE)
    assert code == 0, out + err
    for step in steps_of(tmp_path / "out"):
        assert step["loss"] == pytest.approx(-0.1 * step["entropy"], rel=1e-3)
        assert step["tokens/teaching_share"] == 1.0
    assert "tokens teaching 100%" in out
    assert "0% of " in out and "generated completion tokens trained nothing" in out


def test_without_a_method_flat_groups_teach_nothing(grpo, constant_rewards, tmp_path, capsys):
    code, out, err = grpo(TINY, "--rewards", "test.right", *BASE)
    assert code == 0, out + err
    steps = steps_of(tmp_path / "out")
    assert all(s["loss"] == 0.0 and s["tokens/teaching_share"] == 0.0 for s in steps)
    generated = sum(s["tokens/generated"] for s in steps)
    sentence = f"100% of {int(generated):,} generated completion tokens trained nothing"
    assert sentence in out
    from grpo_core.cli import main

    assert main(["rollouts", str(tmp_path / "out")]) == 0  # a finished run says the same
    assert sentence in capsys.readouterr().out


def test_sign_pays_a_flat_wrong_group_minus_scale_on_every_token(grpo, constant_rewards, tmp_path):
    code, out, err = grpo(TINY, "--rewards", "test.wrong", "--learning.method", "sign(scale=0.2)", *BASE)
    assert code == 0, out + err
    assert [s["loss"] for s in steps_of(tmp_path / "out")] == pytest.approx([0.2, 0.2], rel=1e-4)
    advantages = [r["advantage"] for r in rollout_log.read(tmp_path / "out").to_pylist()]
    assert advantages == pytest.approx([-0.2] * 8)  # the rollout log holds what the loss used (2 steps x 4)


def test_a_plugins_method_trains_and_the_log_holds_its_advantages(grpo, register_plugin, tmp_path):
    """A third party's method, registered through register_advantages: half of TRL's advantage."""
    calls = []

    class Half:
        def rows(self, s):
            calls.append(s.group_size)
            from grpo_core.trainer.methods.base import Advantages
            return Advantages(s.advantages / 2)

    mod = types.ModuleType("half_plugin")
    mod.register_advantages = grpo_core.hookimpl(lambda register: register("acme.half", lambda: Half()))
    register_plugin(mod, name="half_plugin")
    code, out, err = grpo(TINY, "--learning.method", "acme.half", "--no-check")
    assert code == 0, out + err
    assert calls == [4, 4]  # one batch per step, groups of num_generations
    rows = rollout_log.read(tmp_path / "out").to_pylist()
    for step in (1, 2):
        for group in (0,):
            members = [r for r in rows if r["step"] == step and r["group"] == group]
            totals = torch.tensor([r["total"] for r in members])
            trl = (totals - totals.mean()) / (totals.std() + 1e-4)  # TRL's: group mean and (n - 1) std
            assert [r["advantage"] for r in members] == pytest.approx((trl / 2).tolist(), abs=1e-5)


MALFORMED = "; write a method's name, or its name and parameters: zvp or zvp(alpha=0.1)."


@pytest.mark.parametrize("value, says", [
    ("nope", "unknown learning method 'nope'"),
    ("zvp(alpha=0)", "zvp's alpha must be above 0, got 0"),
    ("zvp(beta=1)", "learning method 'zvp' has no parameter 'beta'"),
    # malformed specs trained as zvp (or as zvp(beta=2)) before
    ("zvp(", "learning.method 'zvp(' does not end with the ')' closing its parameters" + MALFORMED),
    ("zvp(alpha=0.2) x", "learning.method 'zvp(alpha=0.2) x' does not end with the ')' closing its parameters"),
    ("(alpha=0.2)", "learning.method '(alpha=0.2)' has no name" + MALFORMED),
    ("zvp(alpha=0.2)(beta=2)", "parameters in learning.method 'zvp(alpha=0.2)(beta=2)' must be key=value pairs"),
])
def test_a_bad_method_is_refused_before_any_model_loads(grpo, value, says):
    code, out, err = grpo(TINY, "--learning.method", value, "--learning.metric", "test.exact", "--rewards",
                          "test.exact", "--dry-run", "--no-check")
    assert code == 2 and says in err and "Traceback" not in out + err, err


def test_a_metric_that_names_no_reward_is_refused_under_any_method(grpo):
    # under the default method (grpo) the misspelt name was ignored without a word
    code, out, err = grpo(TINY, "--learning.metric", "test.exakt", "--dry-run")
    assert code == 2, out + err
    assert ("learning.metric 'test.exakt' is not a reward of stage 'main' (its rewards: test.digits, test.short); "
            "name one of them, or auto (learning.method 'grpo' judges no groups on it: leave it out).") in err
    code, out, err = grpo(TINY, "--learning.method", "sign", "--learning.metric", "test.exakt", "--rewards",
                          "test.exact", "--dry-run", "--no-check")
    assert code == 2 and "learning.metric 'test.exakt' is not a reward of stage 'main' (its rewards: test.exact); " \
        "name one of them, or auto." in err, err
    code, out, err = grpo(TINY, "--learning.method", "sign", "--learning.metric", "test.exact", "--rewards",
                          "test.exact", "--dry-run", "--no-check")
    assert code == 0, out + err


def test_auto_with_two_correctness_rewards_is_refused_naming_both(grpo, tmp_path):
    # which of two correctness rewards judges a group is not guessed (the first was, silently)
    config = tmp_path / "two.yaml"
    config.write_text(TINY.read_text().replace(
        "rewards:\n", "rewards:\n  - test.exact\n  - {name: test.exact, as: exact_again}\n"))
    code, out, err = grpo(config, "--learning.method", "zvp", "--dry-run", "--no-check")
    assert code == 2, out + err
    assert ("learning.method 'zvp' judges flat groups on a correctness reward, but stage 'main' has 2 rewards "
            "registered as correctness (test.exact, exact_again), and auto does not pick one (its rewards: test.exact, "
            "exact_again, test.digits, test.short); set learning.metric to one of them.") in err
    assert grpo(config, "--learning.method", "zvp", "--learning.metric", "exact_again", "--dry-run",
                "--no-check")[0] == 0
    assert grpo(config, "--dry-run", "--no-check")[0] == 0  # grpo judges no groups: two are fine


def test_metric_of_auto_finds_the_one_correctness_reward_or_none():
    from grpo_core.config.learning import metric_of

    def reward(name, correctness=False, rng=None):
        f = types.SimpleNamespace(__name__=name, correctness=correctness, range=rng)
        return f

    one = [reward("fmt"), reward("acc", True, (-1.0, 2.0))]
    assert metric_of(one, "auto") == ("acc", 2.0, -1.0)  # right and wrong read from its range
    assert metric_of(one + [reward("acc2", True)], "auto") is None  # two: not the first
    assert metric_of([reward("fmt")], "auto") is None
    assert metric_of(one, "fmt") == ("fmt", 1.0, 0.0)


def test_zvp_needs_a_correctness_reward_and_says_which_setting_names_it(grpo):
    # tiny.yaml's rewards (test.digits, test.short) declare no correctness
    code, out, err = grpo(TINY, "--learning.method", "zvp", "--dry-run", model=False)
    assert code != 0 and "set learning.metric" in out + err and "test.digits, test.short" in out + err


def test_a_plugin_registering_the_builtin_methods_leaves_default_runs_alone(grpo, register_plugin, tiny_model,
                                                                           capsys):
    # before, its `grpo`, `zvp` and `sign` made every run fail: "learning method 'grpo' is registered by
    # plugin 'grpo_core.trainer.methods' and by plugin 'impostor'; ... until one is uninstalled"
    from grpo_core.cli import main

    mod = types.ModuleType("impostor")

    @grpo_core.hookimpl
    def register_advantages(register):
        for name in ("grpo", "zvp", "sign"):
            register(name, lambda: pytest.fail("the plugin's method was built"))

    mod.register_advantages = register_advantages
    register_plugin(mod, name="impostor")
    code, out, err = grpo(TINY, "--dry-run")
    assert code == 0, out + err
    for name in ("grpo", "zvp", "sign"):
        assert (f"warning: grpo plugin 'impostor': register_advantages: '{name}' is one of grpo's own learning "
                f"methods; the plugin's learning method is left out and grpo's built-in '{name}' is kept") in err
    assert main(["check", str(TINY), "--model.id", str(tiny_model), "--limit", "2"]) == 0, capsys.readouterr()
