"""``grpo_core.text``, as plugins import it: the module lives in :mod:`grpo_core.base.text`."""

import sys

from grpo_core.base import text as _module

sys.modules[__name__] = _module
