"""Held-out accuracy during training with an environment: the held-out prompts are rolled
out as ``grpo eval`` rolls them out (tool calls, their results, the next turn), not
answered in one turn. The policy is scripted (conftest.py): every value is worked out
from the script."""

from __future__ import annotations

import json

from grpo_core.testing import scripted_policy

from .conftest import COMMON, PythonPolicy, metrics, write_config

CONFIG = COMMON + """dataset: {name: toy_arithmetic, system_prompt: plain, eval_split: test}
environment: python(timeout=10.0)
rewards: [math.correctness]
max_completion_length: 128
heldout: {every: 1, prompts: 2}
"""


def test_held_out_accuracy_rolls_the_environment_out_as_grpo_eval_does(grpo, tool_tokenizer, tmp_path):
    """The script asks the python tool for 6 * 7 and 2 ** 10 and answers with what it printed:
    both right (1.0) when the tool's result reaches a second turn; in one turn the completion is
    the tool call alone, with no answer (0.0)."""
    config = write_config(tmp_path / "python.yaml", CONFIG)
    out, report = tmp_path / "out", tmp_path / "eval.json"
    with scripted_policy(tool_tokenizer, PythonPolicy()):
        code, stdout, stderr = grpo("train", config, "--output_dir", out)
        assert code == 0, stdout + stderr
        code, stdout, stderr = grpo("eval", config, "--checkpoint", out / "adapter", "--split", "test",
                                    "--output", report)
        assert code == 0, stdout + stderr
    assert [(r["step"], r["eval/accuracy"]) for r in metrics(out)] == [(1, 1.0), (2, 1.0)]
    data = json.loads(report.read_text())
    assert data["trained"]["accuracy"] == 1.0 and data["trained"]["tool_calls"] == 1.0


def test_held_out_rollouts_leave_trainings_own_sampling_as_it_was(grpo, tool_tokenizer, tmp_path):
    """Building the rollouts' trainer reseeds the random generators: the held-out evaluation puts
    them back, so a run samples the same completions with it and without it. The script leaves
    '2 ** 10' to the model (sampled), and 16 tokens cut every completion short."""
    from grpo_core.trainer import rollout_log

    config = write_config(tmp_path / "python.yaml", CONFIG.replace("max_completion_length: 128",
                                                                   "max_completion_length: 16"))
    script = PythonPolicy()
    completions = {}
    for name, extra in (("with", ()), ("without", ("--heldout.enabled", "false"))):
        with scripted_policy(tool_tokenizer, lambda context: None if "2 ** 10" in context else script(context)):
            code, stdout, stderr = grpo("train", config, "--output_dir", tmp_path / name, *extra)
        assert code == 0, stdout + stderr
        completions[name] = [(r["step"], r["completion"]) for r in rollout_log.read(tmp_path / name).to_pylist()]
    assert [step for step, _ in completions["with"]] == [1] * 4 + [2] * 4
    assert completions["with"] == completions["without"]
