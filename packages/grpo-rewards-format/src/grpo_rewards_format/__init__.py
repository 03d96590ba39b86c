"""grpo_rewards_format: rewards that shape how a model answers (grpo plugin).

Registers ``format.*`` (XML layout, open-r1's layout rules, step markers, JSON
answers), ``length.*`` (``length.relative`` a group reward: Kimi k1.5's length reward
within each prompt's completions) and ``repetition.*`` rewards, each with its value
range, and the ``xml`` system prompt. Importing this module is
cheap: ``json``/``jsonschema`` load when ``format.json`` first runs, ``numpy``
when ``repetition.ngram`` first meets a long completion.
"""

from __future__ import annotations

from grpo_core import hookimpl

from .json_answer import json_answer
from .length import ideal as length_ideal
from .length import relative as length_relative
from .length import soft_overlong
from .prompts import XML, XML_ANSWER_TEMPLATE
from .repetition import ngram as repetition_ngram
from .repetition import ngram_range
from .steps import reasoning_steps
from .tags import tag_count, think_answer, think_answer_r1, xml_incremental, xml_soft, xml_strict

GRPO_PLUGIN_API = "1.0"  # the grpo plugin API this plugin is written for (docs/plugin-api.md)

__version__ = "0.1.0"

REWARDS = {
    "format.xml_strict": xml_strict,
    "format.xml_soft": xml_soft,
    "format.xml_incremental": xml_incremental,
    "format.think_answer": think_answer,
    "format.think_answer_r1": think_answer_r1,
    "format.tag_count": tag_count,
    "format.reasoning_steps": reasoning_steps,
    "format.json": json_answer,
    "length.ideal": length_ideal,
    "length.soft_overlong": soft_overlong,
    "length.relative": length_relative,
    "repetition.ngram": repetition_ngram,
}

# (low, high) each reward can score, or a function of its bound parameters returning it;
# grpo check takes the high end as full marks.
RANGES = {
    "format.xml_strict": (0.0, 1.0),
    "format.xml_soft": (0.0, 1.0),
    "format.xml_incremental": (0.0, 1.0),
    "format.think_answer": (0.0, 1.0),
    "format.think_answer_r1": (0.0, 1.0),
    "format.tag_count": (0.0, 1.0),
    "format.reasoning_steps": (0.0, 1.0),
    "format.json": (0.0, 1.0),
    "length.ideal": (-1.0, 0.0),
    "length.soft_overlong": (-1.0, 0.0),
    "length.relative": (-0.5, 0.5),
    "repetition.ngram": ngram_range,
}

# rewards called once per group of a prompt's completions (grpo_core.rewards.groups)
GROUP = {"length.relative"}


@hookimpl
def register_rewards(register):
    for name, func in REWARDS.items():
        register(name, func, range=RANGES[name], group=name in GROUP)


@hookimpl
def register_system_prompts(register):
    register(
        "xml",
        XML,
        description="Reasoning in <think>, final answer in <answer> (matches format.* rewards)",
        answer_template=XML_ANSWER_TEMPLATE,
    )


__all__ = [
    "GROUP",
    "RANGES",
    "REWARDS",
    "XML",
    "XML_ANSWER_TEMPLATE",
    "json_answer",
    "length_ideal",
    "length_relative",
    "reasoning_steps",
    "repetition_ngram",
    "soft_overlong",
    "tag_count",
    "think_answer",
    "think_answer_r1",
    "xml_incremental",
    "xml_soft",
    "xml_strict",
]
