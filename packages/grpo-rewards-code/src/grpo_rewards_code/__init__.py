"""grpo_rewards_code: rewards that run the model's code against tests in a local
sandbox, and code datasets.

``code.tests``, ``code.runs``, ``code.format``; the ``mbpp``, ``humaneval`` and
``code.files`` datasets; the ``code`` system prompt; the ``python`` and
``guess_number`` environments (tool-using, multi-turn rollouts) and the
``guess_number`` dataset. Importing this module is cheap: the sandbox,
``datasets`` and the adapters load on first use.
"""

from __future__ import annotations

from grpo_core import hookimpl

from .environments import ENVIRONMENTS, load_guess_number
from .loaders import load_code_files, load_humaneval, load_mbpp
from .rewards import REWARDS, code_format, runs, tests

GRPO_PLUGIN_API = "1.0"  # the grpo plugin API this plugin is written for (docs/plugin-api.md)

__version__ = "0.1.0"

CODE = (
    "Solve the programming task in Python. Think it through first if you need to, then give "
    "your complete solution (the function with any imports it needs, and no example calls) "
    "in one ```python code block at the end of your reply."
)
CODE_ANSWER_TEMPLATE = "```python\n{answer}\n```"

# every code reward is a share or a 0/1 verdict, whatever its parameters
RANGES = {"code.tests": (0.0, 1.0), "code.runs": (0.0, 1.0), "code.format": (0.0, 1.0)}

DATASETS = {"mbpp": load_mbpp, "humaneval": load_humaneval, "code.files": load_code_files,
            "guess_number": load_guess_number}


@hookimpl
def register_rewards(register):
    for name, func in REWARDS.items():  # code.tests' full marks mean "every test passes"
        register(name, func, description=func.__doc__.strip().splitlines()[0], correctness=name == "code.tests",
                 range=RANGES[name])


@hookimpl
def register_datasets(register):
    for name, loader in DATASETS.items():
        register(name, loader)  # description: the docstring's first line


@hookimpl
def register_system_prompts(register):
    register("code", CODE, answer_template=CODE_ANSWER_TEMPLATE,
             description="Reasoning, then the solution in one ```python block (matches code.* rewards)")


@hookimpl
def register_environments(register):
    for name, factory in ENVIRONMENTS.items():
        register(name, factory)  # description: the docstring's first line


__all__ = ["tests", "runs", "code_format", "REWARDS", "RANGES", "DATASETS", "CODE", "CODE_ANSWER_TEMPLATE",
           "load_mbpp", "load_humaneval", "load_code_files", "register_rewards", "register_datasets",
           "register_system_prompts", "ENVIRONMENTS", "load_guess_number", "register_environments", "__version__"]
