"""Preloaded by the checker pool's forkserver, first: makes the forkserver die with
the training process that started it (``GRPO_MATH_PARENT_PID``). Its workers die
with it in turn (``_worker.init``), so no checker outlives the trainer, even after
kill -9. It also runs one check, so that every worker forked from it starts with
the first check's one-off costs paid (math-verify's LaTeX parser, sympy's caches:
0.7 s on a busy 2-core machine): a worker replaced after a time-out, or a spare
pool's, is at once as quick as the first. In any other process importing this
module does nothing."""

from __future__ import annotations

import os

PARENT_ENV = "GRPO_MATH_PARENT_PID"

if os.environ.get(PARENT_ENV) == str(os.getppid()):
    from ._worker import check, die_with_parent

    die_with_parent()
    try:
        check(r"2\sqrt{2}", r"\frac{7}{3}")
    except Exception:  # a broken install: the workers' own first task reports it
        pass
