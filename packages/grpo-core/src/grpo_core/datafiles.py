"""``grpo_core.datafiles``, as plugins import it: the module lives in :mod:`grpo_core.data.datafiles`."""

import sys

from grpo_core.data import datafiles as _module

sys.modules[__name__] = _module
