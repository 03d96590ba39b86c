"""The ``xml`` system prompt: asks for exactly the layout the XML rewards score."""

from __future__ import annotations

XML = (
    "Think about the problem step by step inside <think> </think> tags, then give "
    "only the final answer inside <answer> </answer> tags. Write nothing else, in "
    "exactly this format:\n"
    "<think>\n...\n</think>\n<answer>\n...\n</answer>"
)

# Few-shot assistant turns (str.format over a dataset row). The core uses the first
# template whose fields the row has, so datasets without a worked solution still get
# a think block with content rather than an empty one.
XML_ANSWER_TEMPLATE = (
    "<think>\n{rationale}\n</think>\n<answer>\n{answer}\n</answer>",
    "<think>\nI work through the problem step by step and check the result.\n</think>\n"
    "<answer>\n{answer}\n</answer>",
)
