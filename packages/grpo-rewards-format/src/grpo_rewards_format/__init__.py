"""grpo_rewards_format: rewards that shape how a model answers (grpo plugin).

Registers ``format.*`` (XML layout, JSON answers), ``length.*`` and
``repetition.*`` rewards and the ``xml`` system prompt. Importing this module is
cheap: ``json``/``jsonschema`` load when ``format.json`` first runs, ``numpy``
when ``repetition.ngram`` first meets a long completion.
"""

from __future__ import annotations

from grpo_core import hookimpl

from .json_answer import json_answer
from .length import ideal as length_ideal
from .length import soft_overlong
from .prompts import XML, XML_ANSWER_TEMPLATE
from .repetition import ngram as repetition_ngram
from .tags import think_answer, xml_incremental, xml_soft, xml_strict

__version__ = "0.1.0"

REWARDS = {
    "format.xml_strict": xml_strict,
    "format.xml_soft": xml_soft,
    "format.xml_incremental": xml_incremental,
    "format.think_answer": think_answer,
    "format.json": json_answer,
    "length.ideal": length_ideal,
    "length.soft_overlong": soft_overlong,
    "repetition.ngram": repetition_ngram,
}


@hookimpl
def register_rewards(register):
    for name, func in REWARDS.items():
        register(name, func)


@hookimpl
def register_system_prompts(register):
    register(
        "xml",
        XML,
        description="Reasoning in <think>, final answer in <answer> (matches format.* rewards)",
        answer_template=XML_ANSWER_TEMPLATE,
    )


__all__ = [
    "REWARDS",
    "XML",
    "XML_ANSWER_TEMPLATE",
    "json_answer",
    "length_ideal",
    "repetition_ngram",
    "soft_overlong",
    "think_answer",
    "xml_incremental",
    "xml_soft",
    "xml_strict",
]
