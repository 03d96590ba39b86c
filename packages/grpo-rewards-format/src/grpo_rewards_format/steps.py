"""``format.reasoning_steps``: credit for visible step-by-step structure (open-r1's marker list)."""

from __future__ import annotations

import re
from itertools import islice

from grpo_core import text_reward

# open-r1's markers, as one regex without flags: "^" is the start of the text only.
# Linear on any input: no nested quantifiers, and "\d+" can only start after "Step "
# or at position 0.
STEP_RE = re.compile(r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)")


@text_reward
def reasoning_steps(completions: list, min_steps: int = 3, **kwargs) -> list[float]:
    """open-r1's ``reasoning_steps``: min(1, markers / min_steps) over step markers such as "Step 2:".

    reward = min(1.0, k / min_steps), k = number of non-overlapping matches of
      Step \\d+:  |  ^\\d+\\.  |  \\n-  |  \\n\\*  |  First,  |  Second,  |  Next,  |  Finally,
    Range [0.0, 1.0]. As in open-r1 (min_steps=3 there), "^" is the start of the
    text only, so a numbered list "1. ...\\n2. ..." counts once (its first line);
    "-" and "*" bullets count when they open a line after the first; the words
    are case-sensitive and need their comma. \\d is any Unicode digit. Counting
    stops at min_steps matches.

    Parameters: min_steps=3 (markers for full marks, >= 1).
    """
    if isinstance(min_steps, bool) or not isinstance(min_steps, int) or min_steps < 1:
        raise ValueError(f"min_steps must be an integer >= 1, got {min_steps!r}.")
    return [
        min(1.0, sum(1 for _ in islice(STEP_RE.finditer(text), min_steps)) / min_steps)
        for text in completions
    ]
