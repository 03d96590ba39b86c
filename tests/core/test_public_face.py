"""The names the design contract (docs/design.md) fixes, and the module names plugins import,
work as before the rooms: ``from grpo_core import ...`` and ``grpo_core.text`` & co. are the
moved modules; ``grpo_core.methods`` is what a learning method sees and returns."""

from __future__ import annotations

import importlib
import types

import pytest

import grpo_core

DESIGN = ["hookimpl", "list_rewards", "get_reward", "compose_rewards", "list_datasets", "load_dataset"]
ALIASES = {"text": "base.text", "errors": "base.errors", "workers": "base.workers", "datafiles": "data.datafiles",
           "contract": "authoring.contract", "testing": "authoring.testing", "methods": "trainer.methods.base"}


def words(completions, **kwargs):
    """Words in the completion."""
    return [float(len(grpo_core.completion_text(c).split())) for c in completions]


def longer(completions, n: int = 2, **kwargs):
    return [1.0 if len(grpo_core.completion_text(c)) > n else 0.0 for c in completions]


def sums(split: str = "train", size: int = 3):
    from datasets import Dataset

    first = 0 if split == "train" else 100
    return Dataset.from_dict({"question": [f"What is {i} + 1?" for i in range(first, first + size)],
                              "answer": [str(i + 1) for i in range(first, first + size)]})


def face_plugin(marker=grpo_core.hookimpl):
    mod = types.ModuleType("face_plugin")

    def register_rewards(register):
        register("face.words", words)
        register("face.longer", longer, description="Longer than n characters.")

    def register_datasets(register):
        register("face.sums", sums, description="Sums of one.")

    mod.register_rewards, mod.register_datasets = marker(register_rewards), marker(register_datasets)
    return mod


@pytest.fixture
def face(register_plugin):
    register_plugin(face_plugin(), name="face_plugin")


def test_the_design_names_are_exported_and_hookimpl_is_the_hookspecs_marker():
    assert set(DESIGN) <= set(grpo_core.__all__)
    assert grpo_core.hookimpl is importlib.import_module("grpo_core.hookspecs").hookimpl


def test_hookimpl_marks_the_hooks_grpo_calls(register_plugin):
    import pluggy

    # marked by another project's marker, the same functions are not grpo's hooks: nothing registers
    register_plugin(face_plugin(pluggy.HookimplMarker("other")), name="other_plugin")
    assert "face.words" not in [e.name for e in grpo_core.list_rewards()]
    register_plugin(face_plugin(), name="face_plugin")
    assert "face.words" in [e.name for e in grpo_core.list_rewards()]
    assert "face.sums" in [e.name for e in grpo_core.list_datasets()]


def test_list_rewards_is_every_registered_reward_sorted_with_its_plugin_and_description(face):
    entries = grpo_core.list_rewards()
    names = [e.name for e in entries]
    assert names == sorted(names) and {"face.longer", "face.words"} <= set(names)
    by_name = {e.name: e for e in entries}
    assert by_name["face.longer"].description == "Longer than n characters."
    assert by_name["face.words"].description == "Words in the completion."  # the docstring, unless given
    assert by_name["face.words"].plugin == "face_plugin" and by_name["face.words"].obj is words


def test_get_reward_binds_parameters_and_is_named_as_registered(face):
    reward = grpo_core.get_reward("face.longer", n=3)
    assert reward.__name__ == "face.longer"
    # TRL's call: keywords, conversational completions, columns and trainer_state it does not take
    completions = [[{"role": "assistant", "content": t}] for t in ("abc", "abcd")]
    assert reward(completions=completions, prompts=[None, None], answer=["1", "2"], trainer_state=None) == [0.0, 1.0]
    assert grpo_core.get_reward("face.longer")(completions=["abc"]) == [1.0]  # n=2 by default
    with pytest.raises(grpo_core.RewardParamError, match="n"):
        grpo_core.get_reward("face.longer", m=3)
    with pytest.raises(grpo_core.UnknownNameError, match="face.words"):
        grpo_core.get_reward("face.word")


def test_compose_rewards_gives_trls_reward_funcs_and_weights(face):
    funcs, weights = grpo_core.compose_rewards(["face.words", "face.longer(n=4):0.5"])
    assert [f.__name__ for f in funcs] == ["face.words", "face.longer"] and weights == [1.0, 0.5]
    texts = ["one two", "a b c d e"]
    assert [f(completions=texts) for f in funcs] == [[2.0, 5.0], [1.0, 1.0]]
    with pytest.raises(grpo_core.SpecError):
        grpo_core.compose_rewards(["face.words:lots"])


def test_list_datasets_and_load_dataset_by_name_with_split_and_parameters(face):
    entry = {e.name: e for e in grpo_core.list_datasets()}["face.sums"]
    assert entry.description == "Sums of one." and entry.obj is sums
    ds = grpo_core.load_dataset("face.sums", size=2)
    assert ds.column_names == ["question", "answer"] and ds["question"] == ["What is 0 + 1?", "What is 1 + 1?"]
    assert grpo_core.load_dataset("face.sums", split="test", size=1)["answer"] == ["101"]
    with pytest.raises(grpo_core.RewardParamError, match="rows"):
        grpo_core.load_dataset("face.sums", rows=2)


@pytest.mark.parametrize("old, room", sorted(ALIASES.items()))
def test_a_moved_module_is_the_same_object_under_its_old_name(old, room):
    assert importlib.import_module(f"grpo_core.{old}") is importlib.import_module(f"grpo_core.{room}")


def test_a_reward_by_name_is_a_trl_reward_named_as_registered(monkeypatch):
    monkeypatch.setenv("GRPO_PLUGINS", "")  # the core's own rewards only
    assert "remote.server" in [entry.name for entry in grpo_core.list_rewards()]
    assert grpo_core.get_reward("remote.server", url="http://127.0.0.1:9").__name__ == "remote.server"
    funcs, weights = grpo_core.compose_rewards(["remote.server(url='http://127.0.0.1:9'):2.5"])
    assert [f.__name__ for f in funcs] == ["remote.server"] and weights == [2.5]


def test_a_learning_method_imports_what_it_sees_and_returns_from_grpo_core_methods():
    """The plugin-facing classes of ``register_advantages`` (docs/writing-plugins.md)."""
    import grpo_core.methods as public

    assert {"Scored", "Advantages", "Method", "finite"} <= set(public.__all__)
    scored = public.Scored(rewards={}, weights=[1.0], advantages=[1.0, -1.0], group_size=2)
    assert public.Advantages(scored.advantages).rows == [1.0, -1.0] and public.finite(2, "x") == 2.0
    with pytest.raises(ValueError, match="x must be a finite number, got nan"):
        public.finite(float("nan"), "x")
