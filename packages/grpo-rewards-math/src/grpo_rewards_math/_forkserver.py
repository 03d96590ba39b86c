"""Preloaded by the checker pool's forkserver, first: makes the forkserver die with
the training process that started it (``GRPO_MATH_PARENT_PID``). Its workers die
with it in turn (``_worker.init``), so no checker outlives the trainer, even after
kill -9. In any other process importing this module does nothing."""

from __future__ import annotations

import os

PARENT_ENV = "GRPO_MATH_PARENT_PID"

if os.environ.get(PARENT_ENV) == str(os.getppid()):
    from ._worker import die_with_parent

    die_with_parent()
