"""Hook specifications of the ``grpo`` plugin system.

A plugin implements any of these with ``@grpo_core.hookimpl``. Each hook hands the
plugin a ``register`` callback; the core owns the registry and validates what is
registered, so a plugin never sees the registry itself.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

hookspec = pluggy.HookspecMarker("grpo")
hookimpl = pluggy.HookimplMarker("grpo")


@hookspec
def register_rewards(register: Callable[..., None]) -> None:
    """Register reward functions:
    ``register(name, func, *, description=None, correctness=False, range=None, reads_answers=None, group=False)``.

    :param register: call once per reward. ``name`` is dotted and lower case
        (``math.correctness``); ``func`` is a TRL reward function
        ``func(completions, **kwargs) -> list[float | None]``.
        ``correctness=True``: full marks mean "the answer is right" (``grpo check``'s
        gold self-test holds it to 99 %, ``grpo eval`` reports it as accuracy).
        ``range=(low, high)``: the scores it can give, or a function of the reward's
        parameters returning them; ``grpo check`` takes ``high`` as full marks.
        ``reads_answers=False``: it is not meant to judge answers (a topic or mention
        reward), so ``grpo check`` does not fail it for paying hedges as much as the
        gold; by default a reward that pays the gold more than a wrong answer reads
        answers and may not (``True``: it always reads them). A function of one's own
        says the same with a ``reads_answers`` attribute.
        ``group=True``: a group reward, called once per group of one prompt's completions
        (``func(completions, **kwargs)`` with the group's completions and columns) and
        returning one value per completion of the group; to TRL and the rest of grpo it is
        an ordinary reward (:mod:`grpo_core.rewards.groups`). A function of one's own
        says it with a ``group = True`` attribute.
    """


@hookspec
def register_datasets(register: Callable[..., None]) -> None:
    """Register dataset adapters: ``register(name, loader, *, description=None)``.

    :param register: call once per adapter. ``loader(split="train", **params)``
        returns a ``datasets.Dataset`` with a ``question`` column and, for
        verifiable tasks, an ``answer`` column.
    """


@hookspec
def register_system_prompts(register: Callable[..., None]) -> None:
    """Register named system prompts:
    ``register(name, text, *, description=None, answer_template=None)``.

    :param register: call once per prompt. A training config can then say
        ``system_prompt: xml`` instead of pasting the text. ``answer_template``: the
        answer layout the prompt asks for, with ``{answer}`` (and ``{rationale}``):
        few-shot examples and ``grpo check``'s gold completions are written with it.
    """


@hookspec
def register_probes(register: Callable[..., None]) -> None:
    """Register reward-hacking probes for ``grpo check``:
    ``register(name, build, *, description=None, right=False)``.

    :param register: call once per probe. ``build(row)`` gets a
        :class:`grpo_core.checks.checks.ProbeRow` (``row.gold``, ``row.wrong``,
        ``row.question``, ``row.fill(answer, reasoning=None)``) and returns the
        adversarial completion text. ``right=True``: it carries the right answer,
        so only the weighted total may not exceed the gold completion's.
    """


@hookspec
def register_environments(register: Callable[..., None]) -> None:
    """Register environments for tool-using, multi-turn rollouts:
    ``register(name, factory, *, description=None)``.

    :param register: call once per environment. ``factory(**params)`` returns what
        TRL's ``environment_factory`` takes: a class (or a zero-argument callable
        making instances) with ``reset(**row)``, public methods as the model's
        tools and an optional ``get_reward()``. A class registered directly is its
        own factory: its ``__init__`` keywords are the parameters.
    """


@hookspec
def register_advantages(register: Callable[..., None]) -> None:
    """Register learning methods: ``register(name, factory, *, description=None)``.

    :param register: call once per method. ``factory(**params)`` returns the method,
        an object with ``rows(scored) -> Advantages`` and optionally
        ``tokens(rows, extra, entropies, mask)`` (per-token advantages at loss time);
        see :mod:`grpo_core.methods`. A config picks one with
        ``learning.method: NAME`` or ``NAME(key=value)``; its keyword parameters with
        defaults are the method's parameters.
    """


@hookspec
def register_samplers(register: Callable[..., None]) -> None:
    """Register prompt samplers: ``register(name, factory, *, description=None)``.

    :param register: call once per sampler. A sampler chooses which training prompts a
        generation batch draws, before anything is generated. ``factory(**params)`` returns
        an object with ``choose(pool, n, proposed) -> list[int]`` (``n`` row
        indices of the training set) and optionally ``observe(rows, passed)``,
        ``metrics()``, ``state()`` and ``load(state)``; see
        :mod:`grpo_core.trainer.samplers.base`. A config picks one with
        ``sampling.prompts: NAME`` or ``NAME(key=value)``; the default, ``trl``, is TRL's
        own sampler, unchanged.
    """


@hookspec
def register_commands(register: Callable[..., None]) -> None:
    """Register ``grpo`` subcommands: ``register(name, setup, *, description=None)``.

    :param register: call once per command. ``name`` is lower case, words joined by
        ``-`` (``acme-lengths``), and none of grpo's own commands. ``setup(parser)``
        gets the command's ``argparse.ArgumentParser`` (``grpo NAME``), adds its
        arguments and sets ``parser.set_defaults(func=run)``; ``run(args)`` returns the
        exit code. ``setup`` is called only when the command is run (``grpo --help``
        lists it by name and description), so a plugin's module stays cheap to import.
    """
