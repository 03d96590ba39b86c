"""open-r1's reward names as our rewards: the table a recipe's ``reward_funcs`` is read with.

open-r1 recipes (``recipes/*/grpo/*.yaml``) name rewards (``accuracy``, ``format``,
...) and set their parameters as top-level fields (``cosine_max_len: 1000``).
Each entry says which of our registered rewards gives the same values, which of
its parameters each open-r1 field sets (with the field's default in open-r1's
``configs.py``, for a recipe that omits it), the parameters the mapping always
sets, the dataset columns open-r1 reads under another name, and where our values
differ on purpose. Read against open-r1 at commit 1416fa0 (``src/open_r1/rewards.py``,
``src/open_r1/configs.py``). The code entries
(``code``, ``binary_code``, ``code_format``) name grpo-rewards-code's rewards; open-r1's
remote judges (``ioi_code``, ``cf_code``) have no entry (see :mod:`grpo_core.config.openr1`).
Pure data: importing it loads no plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class OpenR1Reward:
    """One open-r1 reward name, as our reward ``spec`` and its parameters."""

    spec: str  # our registered reward name
    params: Mapping[str, str] = field(default_factory=dict)  # open-r1 field -> our parameter
    defaults: Mapping[str, Any] = field(default_factory=dict)  # open-r1 field -> default in configs.py
    fixed: Mapping[str, Any] = field(default_factory=dict)  # our parameter -> value giving open-r1's behaviour
    columns: Mapping[str, str] = field(default_factory=dict)  # open-r1 dataset column -> ours
    note: str = ""  # where our values differ from open-r1's on purpose, or ""

    def __post_init__(self):
        if set(self.params) != set(self.defaults):
            raise ValueError(f"{self.spec}: every open-r1 field needs its default; fields {sorted(self.params)}, "
                             f"defaults {sorted(self.defaults)}.")
        for name in ("params", "defaults", "fixed", "columns"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def params_for(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Our parameters for an open-r1 config (its top-level fields; omitted ones take open-r1's default)."""
        out = dict(self.fixed)
        for openr1_field, ours in self.params.items():
            out[ours] = config.get(openr1_field, self.defaults[openr1_field])
        return out


_EXTRACTION = (
    "The final answer is read by math.correctness's chain (the <answer> block, else the boxes, '#### x', "
    "'the answer is' phrases), where open-r1 reads only the first LaTeX expression of the completion "
    "(a \\boxed{} first, else $...$; plain text such as 'The answer is 42' gives it no answer)."
)

_CODE = (
    "Runs locally in grpo's sandbox (no network; code.tests' limits, 5 s per run by default), where open-r1 sends "
    "the code to E2B or Morph (code_provider) and runs it with python3 -c against the row's verification_info test "
    "cases (stdin -> stdout). A case passes as in open-r1 (exit status 0; the output stripped, split into lines, "
    "each compared stripped), except that the number of lines must match: open-r1 pairs them with zip, which stops "
    "at the shorter side, so there a program printing only the first line of a multi-line answer passes (a reward "
    "hack). A case past the time limit fails on its own (open-r1: the script raises and the completion scores 0.0)."
)

OPENR1_REWARDS: dict[str, OpenR1Reward] = {
    "accuracy": OpenR1Reward(
        spec="math.correctness",
        columns={"solution": "answer"},
        note=_EXTRACTION + " A check past its time limit scores 0.0 (open-r1: None when verify raises). "
        "A gold that cannot be parsed scores None in both (open-r1 before its #566, April 2025, paid 1.0).",
    ),
    "format": OpenR1Reward(spec="format.think_answer_r1"),
    "reasoning_steps": OpenR1Reward(spec="format.reasoning_steps"),
    "cosine": OpenR1Reward(
        spec="math.cosine",
        params={
            "cosine_min_value_wrong": "min_value_wrong",
            "cosine_max_value_wrong": "max_value_wrong",
            "cosine_min_value_correct": "min_value_correct",
            "cosine_max_value_correct": "max_value_correct",
            "cosine_max_len": "max_len",
        },
        # configs.py's defaults; its get_cosine_scaled_reward's own default for min_value_wrong is -1.0
        defaults={
            "cosine_min_value_wrong": 0.0,
            "cosine_max_value_wrong": -0.5,
            "cosine_min_value_correct": 0.5,
            "cosine_max_value_correct": 1.0,
            "cosine_max_len": 1000,
        },
        fixed={"unit": "chars"},
        columns={"solution": "answer"},
        note="Beyond cosine_max_len ours holds the value at max_len; open-r1's cos(pi * L / max_len) turns back "
        "up (a correct answer of 2 * max_len characters gets max_value_correct again). A gold that cannot be "
        "parsed scores None (open-r1 pays 1.0). " + _EXTRACTION,
    ),
    "repetition_penalty": OpenR1Reward(
        spec="repetition.ngram",
        params={"repetition_n_grams": "n", "repetition_max_penalty": "max_penalty"},
        defaults={"repetition_n_grams": 3, "repetition_max_penalty": -1.0},
        fixed={"language": "en"},  # open-r1 never passes its language: lower-cased words
    ),
    "length": OpenR1Reward(
        spec="math.kimi_length",
        fixed={"unit": "chars", "group_by": "batch"},
        columns={"solution": "answer"},
        note="A gold that cannot be parsed scores None (open-r1 counts the completion as correct); its length "
        "still counts for the batch's min and max. " + _EXTRACTION,
    ),
    "tag_count": OpenR1Reward(spec="format.tag_count"),
    "code": OpenR1Reward(
        spec="code.tests",
        params={"parallel_code_exec_per_proc": "workers"},
        defaults={"parallel_code_exec_per_proc": 2},
        note=_CODE + " Share of the row's cases passed, as open-r1's (its default 2 runs at a time per process suit "
        "E2B's free tier; raise parallel_code_exec_per_proc to use more cores).",
    ),
    "binary_code": OpenR1Reward(
        spec="code.tests",
        params={"parallel_code_exec_per_proc": "workers"},
        defaults={"parallel_code_exec_per_proc": 2},
        fixed={"all_or_nothing": True},
        note=_CODE + " 1.0 when every case passes, else 0.0 (open-r1: above 0.99 of them).",
    ),
    "code_format": OpenR1Reward(
        spec="code.format",
        note="1.0 when the completion holds Python code that parses (the <answer> block's code, else the last "
        "```python block); open-r1 asks for the whole <think>/<answer> layout with a ```{code_language} block "
        "inside <answer> and parses nothing. Pair it with format for the layout. code_language other than python "
        "is refused: grpo's code rewards read Python only.",
    ),
    "soft_overlong_punishment": OpenR1Reward(
        spec="length.soft_overlong",
        params={"max_completion_len": "max_length", "soft_punish_cache": "cache"},
        defaults={"max_completion_len": 16384, "soft_punish_cache": 4096},
        note="Lengths are tokens in both (configs.py's help says characters). soft_punish_cache > "
        "max_completion_len is refused (open-r1 then scores every completion below 0). Without completion_ids "
        "(grpo score) ours estimates ceil(characters / 4) tokens, where open-r1 needs the ids.",
    ),
}

__all__ = ["OPENR1_REWARDS", "OpenR1Reward"]
