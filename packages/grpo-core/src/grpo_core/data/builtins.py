"""The core's own contributions, registered like any plugin (a default plugin)."""

from __future__ import annotations

from grpo_core.data.recipe_datasets import openr1_dataset, trl_dataset
from grpo_core.hookspecs import hookimpl
from grpo_core.rewards import remote
from grpo_core.rewards.reward_model import classifier

PLAIN = (
    "Solve the problem step by step, then give the final answer on its own line "
    "as 'Answer: <answer>'."
)


@hookimpl
def register_system_prompts(register):
    register(
        "plain",
        PLAIN,
        description="Step-by-step reasoning, final line 'Answer: <answer>' (no tags)",
        answer_template="Answer: {answer}",
    )


@hookimpl
def register_rewards(register):
    register("model.classifier", classifier,
             description="A sequence-classification reward model's score (logit 0) on prompt + completion")
    register("remote.server", remote.server,
             description="Scores from a running `grpo serve` (url=..., reward=NAME or the weighted total)")


@hookimpl
def register_datasets(register):
    register("trl", trl_dataset, description="A dataset as `trl grpo` loads it: dataset_name (hub id or local path) "
             "or a datasets: mixture; keeps its prompt column")
    register("openr1", openr1_dataset, description="A dataset as open-r1's GRPO script loads it: dataset_name or "
             "dataset_mixture, its prompt_column's text as the question")
