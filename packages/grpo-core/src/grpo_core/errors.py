"""``grpo_core.errors``, as plugins import it: the module lives in :mod:`grpo_core.base.errors`."""

import sys

from grpo_core.base import errors as _module

sys.modules[__name__] = _module
