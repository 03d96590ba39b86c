"""``grpo_core.errors``, as plugins import it: the module lives in :mod:`grpo_core.base.errors`."""

import sys
from functools import partial

from grpo_core.base import errors as _module

# A thread that imported this name while another was running this file holds this module
# object, not the one below: its names resolve there all the same (PEP 562).
__getattr__ = partial(getattr, _module)
sys.modules[__name__] = _module
