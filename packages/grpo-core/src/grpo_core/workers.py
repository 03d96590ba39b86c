"""``grpo_core.workers``, as plugins import it: the module lives in :mod:`grpo_core.base.workers`."""

import sys

from grpo_core.base import workers as _module

sys.modules[__name__] = _module
