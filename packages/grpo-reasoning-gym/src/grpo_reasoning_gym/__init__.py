"""grpo_reasoning_gym: reasoning-gym's procedural tasks for grpo.

Datasets ``rg.<task>`` (a dozen tasks by name, their settings as parameters) and
``rg.task(task=..., config={...})`` (any task of reasoning-gym's registry whose scorer
does not evaluate the answer as code); the reward ``rg.score``, reasoning-gym's own
scorer on the final answer, registered as a correctness reward with range (0, 1).

This is the plugin's entry-point module, imported whenever grpo lists plugins:
nothing here imports reasoning-gym (1-2 s) or ``datasets``; they load with the first
task's rows or parameters.
"""

from __future__ import annotations

from grpo_core import hookimpl

from .answer import Extraction, final_answer
from .score import score
from .tasks import EVALUATING, REFUSED, load_any, load_task, task_loader

GRPO_PLUGIN_API = "1.0"  # the grpo plugin API this plugin is written for (docs/plugin-api.md)

__version__ = "0.1.0"

# The tasks registered by name: short answers (a number, a word, a line) that a small model
# can learn and whose scorers read the answer as text. Every other task: rg.task(task=...).
TASKS = {
    "chain_sum": "Sums and differences of integers ('4 - 1 - 7 =')",
    "basic_arithmetic": "Expressions with + - * / and parentheses ('Calculate 5 - 3 * 6.')",
    "leg_counting": "The legs of a list of animals ('13 spiders, 8 tigers, ...')",
    "decimal_chain_sum": "Sums and differences of decimals ('4.44 + 1.25 - 7.9 =')",
    "products": "Products of integers ('18271 * 43432')",
    "gcd": "The greatest common divisor of integers",
    "lcm": "The least common multiple of integers",
    "count_bits": "The 1 bits of a number's binary form",
    "letter_counting": "How often a letter occurs in a text",
    "spell_backward": "A word spelt backward",
    "simple_equations": "A linear equation solved for its variable ('56 - 98*e = -1218')",
    "word_sequence_reversal": "A list of words reversed",
    "syllogism": "Whether a conclusion follows from two statements (Yes/No)",
}


@hookimpl
def register_datasets(register):
    for task, summary in TASKS.items():
        register(f"rg.{task}", task_loader(task, summary), description=f"reasoning-gym: {summary}")
    register("rg.task", load_any,
             description="reasoning-gym: any task by name (task=..., its settings in config={...})")


@hookimpl
def register_rewards(register):
    register(
        "rg.score",
        score,
        description="reasoning-gym's own score_answer on the final answer ('Answer:' line, <answer> tag, box, "
                    "else the last line), 0..1; reads rg_entry",
        correctness=True,
        range=(0.0, 1.0),
    )


__all__ = ["register_datasets", "register_rewards", "score", "final_answer", "Extraction", "load_task",
           "load_any", "task_loader", "TASKS", "REFUSED", "EVALUATING", "__version__"]
