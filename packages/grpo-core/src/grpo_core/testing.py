"""``grpo_core.testing``, as plugins import it: the module lives in :mod:`grpo_core.authoring.testing`."""

import sys

from grpo_core.authoring import testing as _module

sys.modules[__name__] = _module
