"""``grpo_core.methods``, as plugins import it: what a learning method sees (``Scored``) and
returns (``Advantages``), the ``Method`` protocol and ``finite``. The module lives in
:mod:`grpo_core.trainer.methods.base`."""

import sys
from functools import partial
from typing import TYPE_CHECKING

from grpo_core.trainer.methods import base as _module

if TYPE_CHECKING:  # what type checkers and editors read: the swap below is invisible to them
    from grpo_core.trainer.methods.base import *  # noqa: F403
else:
    # A thread that imported this name while another was running this file holds this module
    # object, not the one below: its names resolve there all the same (PEP 562).
    __getattr__ = partial(getattr, _module)
sys.modules[__name__] = _module
