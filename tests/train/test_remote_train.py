"""`grpo train` with a reward scored by `grpo serve`: the same step-1 rewards as the
same reward in process (the same seed writes the same completions)."""

from __future__ import annotations

import argparse

import pytest

from grpo_core.trainer import rollout_log

from .conftest import TINY


def _serve(specs: list[str]):
    from grpo_core.commands.serve import build
    from grpo_core.serve.server import Background

    return Background(build(argparse.Namespace(
        config=None, rewards=specs, stage=None, host="127.0.0.1", port=0, token=None, workers=2, queue=8,
        time_limit=None, max_body=1 << 20, max_items=256, max_chars=4000, label_column="answer")))


def test_a_served_reward_trains_as_the_same_reward_in_process(grpo, tmp_path):
    # seed 1: the tiny random model writes a digit in some completions, so test.digits' scores differ (below)
    code, out, err = grpo(TINY, "--max_steps", "1", "--seed", "1", out=tmp_path / "local")
    assert code == 0, out + err
    local = rollout_log.read(tmp_path / "local").to_pylist()
    text = TINY.read_text()
    with _serve(["test.digits"]) as url:
        served = tmp_path / "served.yaml"
        served.write_text(text.replace("  - test.digits:1.0", f"  - \"remote.server(url='{url}'):1.0\""))
        assert "remote.server" in served.read_text()
        code, out, err = grpo(served, "--max_steps", "1", "--seed", "1", out=tmp_path / "remote")
    assert code == 0, out + err
    remote = rollout_log.read(tmp_path / "remote").to_pylist()
    assert [r["completion"] for r in remote] == [r["completion"] for r in local]
    name = next(k for k in remote[0] if k.startswith("reward/remote.server"))
    assert [r[name] for r in remote] == pytest.approx([r["reward/test.digits"] for r in local], abs=1e-9)
    assert [r["total"] for r in remote] == pytest.approx([r["total"] for r in local], abs=1e-9)
    assert len({r["reward/test.digits"] for r in local}) > 1  # (scores that could have differed)
