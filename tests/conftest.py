"""Shared fixtures. Tests never load installed plugins unless they ask to:
GRPO_PLUGINS is set to empty before grpo_core loads anything, and tests register
the plugin modules they need with the ``register_plugin`` fixture."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

os.environ["GRPO_PLUGINS"] = ""
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def float32_sampling_by_default(monkeypatch):
    """``sampling.precision: auto`` samples as the model is in every test, whatever this CPU's
    flags: on a CPU with bfloat16 instructions auto samples in bf16, and TRL's correction then
    moves each loss by the sampler's mismatch (a hand-worked 0.2 came out 0.20012), so a figure
    would hold on one machine and not on another. Tests of bf16 sampling ask for it by name."""
    import grpo_core.run.prepare as prepare

    monkeypatch.setattr(prepare, "cpu_bf16", lambda *args, **kwargs: False)


@pytest.fixture
def plugin_manager():
    """A clean plugin manager (default plugins only), reset again afterwards."""
    from grpo_core.plugin import plugins

    plugins.reset()
    try:
        yield plugins.pm
    finally:
        plugins.reset()


@pytest.fixture
def register_plugin(plugin_manager):
    """``register_plugin(module_or_object, name=None)``: register in process, undone after."""
    from grpo_core.plugin import plugins

    plugins.load_plugins()

    def register(plugin, name=None):
        return plugin_manager.register(plugin, name=name or getattr(plugin, "__name__", None))

    yield register


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """Path of a tiny random Qwen2 model with a tokenizer trained on the fly."""
    from grpo_core.testing import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


OUR_PLUGINS = "grpo-datasets,grpo-rewards-math,grpo-rewards-format"


def use_installed(monkeypatch, dists: str):
    """Load these plugin distributions by entry point, as a user has them (the test is
    skipped if one is not installed); a generator fixture's body: reset afterwards."""
    from importlib.metadata import PackageNotFoundError, distribution

    from grpo_core.plugin import plugins

    for dist in dists.split(","):
        try:
            distribution(dist)
        except PackageNotFoundError:
            pytest.skip(f"{dist} is not installed")
    monkeypatch.setenv("GRPO_PLUGINS", dists)
    plugins.reset()
    yield
    plugins.reset()


@pytest.fixture
def installed_plugins(monkeypatch):
    """Our three plugin distributions loaded by entry point (skips if one is missing)."""
    yield from use_installed(monkeypatch, OUR_PLUGINS)


class Writers:
    """Fixture files in a dataset's real column layout (``write.jsonl(path, rows)``),
    for the dataset adapters' tests."""

    @staticmethod
    def jsonl(path: Path, rows: list[dict]) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    @staticmethod
    def json(path: Path, rows: list[dict]) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows), encoding="utf-8")
        return path

    @staticmethod
    def parquet(path: Path, rows: list[dict]) -> Path:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), path)
        return path

    @staticmethod
    def csv(path: Path, rows: list[dict]) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return path


@pytest.fixture
def write() -> type[Writers]:
    return Writers
