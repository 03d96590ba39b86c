"""The core's own contributions, registered like any plugin (a default plugin)."""

from __future__ import annotations

from .hookspecs import hookimpl

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
