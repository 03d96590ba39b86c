"""``grpo_core.contract``, as plugins import it: the module lives in :mod:`grpo_core.authoring.contract`."""

import sys

from grpo_core.authoring import contract as _module

sys.modules[__name__] = _module
