"""grpo-rewards-judge installs beside a plain grpo-core and needs nothing else: installed into a
fresh virtualenv (nothing downloaded), loaded alone by entry point, it lists its rewards and
command, passes ``grpo rewards check`` against a fake judge, and keeps ``grpo --help`` free of
torch."""

from __future__ import annotations

import json
import os
import subprocess
from importlib.metadata import distribution
from pathlib import Path

import pytest

from grpo_rewards_judge.testing import FakeJudge, exact

from ..core.test_scaffold import _venv_on_this_env

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(600)


def test_its_only_requirement_is_grpo_core():
    requires = distribution("grpo-rewards-judge").requires
    assert [r for r in requires if "extra ==" not in r] == ["grpo-core>=0.1"]


def _run(python: Path, *args: str, cwd: Path, env: dict | None = None) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("GRPO_PLUGINS", "PYTHONPATH")}
    out = subprocess.run([str(python), *args], cwd=cwd, env={**base, **(env or {})}, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, f"{args} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def test_it_installs_beside_a_plain_grpo_core_and_works_alone(tmp_path):
    python = _venv_on_this_env(tmp_path / "venv")  # sees this environment's packages: nothing downloaded
    pip = ("-m", "pip", "install", "-q", "--no-index", "--no-build-isolation")
    _run(python, *pip, "--no-deps", str(ROOT / "packages" / "grpo-core"), cwd=tmp_path)
    _run(python, *pip, str(ROOT / "packages" / "grpo-rewards-judge"), cwd=tmp_path)  # its requirement is met
    where = _run(python, "-c", "import grpo_rewards_judge; print(grpo_rewards_judge.__file__)", cwd=tmp_path)
    assert str(tmp_path / "venv") in where  # the installed copy, not the checkout's

    alone = {"GRPO_PLUGINS": "grpo-rewards-judge", "GRPO_JUDGE_CACHE": str(tmp_path / "cache")}
    listed = json.loads(_run(python, "-m", "grpo_core", "rewards", "list", "--json", cwd=tmp_path, env=alone))
    plugin = {r["name"] for r in listed if r.get("distribution") == "grpo-rewards-judge"}
    assert plugin == {"judge.score", "judge.yesno", "judge.rubric", "judge.pairwise"}
    assert not any(r["name"].startswith("math.") for r in listed)  # alone: no other plugin loaded

    heavy = ("import sys; from grpo_core.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print('heavy:', [m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules])")
    helped = _run(python, "-c", heavy, cwd=tmp_path, env=alone)
    assert "judge" in helped and "grpo judge calibrate" in helped and "heavy: []" in helped

    with FakeJudge(exact) as judge:
        checked = _run(python, "-m", "grpo_core", "rewards", "check", "judge.yesno", "--url", judge.url,
                       cwd=tmp_path, env=alone)
    assert checked.splitlines()[-1] == "9 passed, 0 failed"
