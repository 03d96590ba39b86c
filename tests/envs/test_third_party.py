"""A third party's environment plugin, installed (a fake distribution declaring the
`grpo` entry point), found by entry point and trained by name. Its environment is
the guide's own example (docs/writing-plugins.md, register_environments), so the
guide's code is the code that trains."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grpo_core.plugin import plugins
from grpo_core.testing import scripted_policy

from ..core.fakedist import make_dist, run_grpo
from .conftest import metrics, tool_call, tool_results, write_config

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "writing-plugins.md").read_text()
EXAMPLE = re.search(r"### `register_environments\(register\)`.*?```python\n(.*?)\n```", GUIDE, re.S).group(1)

DATASET = '''

def load_targets(split: str = "train"):
    """Two targets to reach."""
    from datasets import Dataset

    return Dataset.from_dict({"question": ["Reach 5 with add(n).", "Reach 7 with add(n)."], "target": [5, 7]})


@hookimpl
def register_datasets(register):
    register("acme_targets", load_targets)
'''


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    make_dist(site, "acme-envs", {"acme_envs": "acme_envs"}, {"acme_envs": EXAMPLE + DATASET})
    return site


def test_the_plugin_is_listed_by_entry_point(site):
    out = run_grpo(["envs", "list", "--json"], site, plugins="acme-envs")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{"name": "acme.counter", "plugin": "acme_envs", "distribution": "acme-envs",
                                       "version": "1.0",
                                       "description": "Reach the row's target with add(n); 1.0 when the total hits it."}]


def add_five(context: str) -> str:
    """Adds 5 once, then reports the total it was shown."""
    results = tool_results(context)
    return f"The total is {results[-1]}." if results else tool_call("add", n=5)


def test_the_plugin_trains_by_name(site, tool_model, tool_tokenizer, tmp_path, monkeypatch, capsys):
    from grpo_core.cli import main

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("GRPO_PLUGINS", "acme-envs")
    plugins.reset()
    config = write_config(tmp_path / "acme.yaml", """
model: {dtype: float32}
lora: {r: 4, lora_alpha: 8}
dataset: {name: acme_targets}
environment: acme.counter(max_calls=2)
max_steps: 2
learning_rate: 1.0e-3
per_device_train_batch_size: 4
num_generations: 2
max_completion_length: 96
gradient_checkpointing: false
save_strategy: "no"
report_to: []
seed: 0
""")
    out = tmp_path / "out"
    try:
        with scripted_policy(tool_tokenizer, add_five):
            code = main(["train", str(config), "--model.id", str(tool_model), "--output_dir", str(out)])
    finally:
        plugins.reset()
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    for r in metrics(out):
        assert r["tools/call_frequency"] == 1.0
        assert r["rewards/acme.counter/mean"] == 0.5  # target 5 reached by add(5): 1.0; target 7 not: 0.0
    assert "environment: acme.counter(max_calls=2)" in (out / "config.yaml").read_text()
