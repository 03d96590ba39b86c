"""`grpo doctor`: each line what a user filing an issue needs, a failing check makes the exit
code 1, `--json` says the same; faked environments (a CUDA torch on an H100, a TRL outside
the tested range, a GPU without bf16, a CPU torch beside an NVIDIA driver) stand in for
machines this one is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from grpo_core.cli import main
from grpo_core.commands import doctor

H100 = {"version": "2.11.0+cu128", "cuda": "12.8", "cudnn": 91002, "bf16": True, "mps": False,
        "cpu_bf16": False, "threads": 8, "nvidia_driver": True,
        "devices": [{"name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "memory_gib": 79.2}]}
T4 = {**H100, "version": "2.10.1+cu126", "cuda": "12.6", "bf16": False,
      "devices": [{"name": "Tesla T4", "capability": "7.5", "memory_gib": 14.6}]}
CPU_BESIDE_GPU = {**H100, "version": "2.13.0+cpu", "cuda": None, "cudnn": None, "bf16": False, "devices": []}


@pytest.fixture
def fake(monkeypatch):
    """``fake(torch_facts, **versions)``: doctor sees that torch and those distributions' versions."""
    import importlib.metadata

    def fake(torch: dict, **versions: str):
        real = importlib.metadata.version
        monkeypatch.setattr(doctor, "torch_facts", lambda: torch)
        monkeypatch.setattr(importlib.metadata, "version", lambda d: versions.get(d, None) or real(d))
    return fake


def _checks(out: str) -> dict[str, tuple[str, str]]:
    """The checks table: name -> (mark, verdict text)."""
    table = out.split("\n\n")[3].splitlines()[2:]
    rows = {}
    for line in table:
        mark, rest = line[:6].strip(), line[6:]
        name, _, text = rest.partition("  ")
        rows[name.strip()] = (mark, text.strip())
    return rows


def test_an_h100_with_a_trl_outside_the_range_fails_and_says_each_thing(fake, capsys):
    fake(H100, trl="1.13.0")
    assert main(["doctor", "--no-rewards"]) == 1
    out = capsys.readouterr().out
    assert "\ntorch         2.11.0+cu128 (CUDA 12.8, cuDNN 91002)\n" in out
    assert "\ntrl           1.13.0\n" in out
    assert "\ndevice: cuda: 1 GPU(s): NVIDIA H100 80GB HBM3 (compute 9.0, 79.2 GiB); CUDA 12.8, cuDNN 91002\n" in out
    checks = _checks(out)
    assert checks["trl in the tested range"] == (
        "FAIL", "trl 1.13.0 is installed; grpo is tested with trl>=1.14.2,!=1.15.*,<1.17 and relies on its "
                "internals: pip install 'trl>=1.14.2,!=1.15.*,<1.17' (grpo train refuses it)")
    assert checks["torch build"] == ("ok", "torch 2.11.0+cu128, CUDA 12.8")
    assert checks["cuDNN attention NaN (pytorch#196678)"] == (
        "ok", "torch 2.11.0+cu128 has it: grpo train turns cuDNN's attention kernel off while training "
              "(model.cudnn_attention: false, the default); leave it off (docs/gpu.md)")
    assert checks["bf16"] == ("ok", "the GPU computes in bf16: bf16: true trains in it")
    assert checks["plugins"][0] == "ok"
    assert out.rstrip().endswith("1 check(s) failed: trl in the tested range. `grpo doctor --json` prints this "
                                 "for an issue report.")


def test_json_says_the_same_for_an_issue(fake, capsys):
    fake(H100, trl="1.13.0")
    assert main(["doctor", "--no-rewards", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["plugin_api"] == "1.0"
    assert report["versions"]["trl"] == "1.13.0" and report["torch"]["cuda"] == "12.8"
    verdicts = {c["name"]: c["verdict"] for c in report["checks"]}
    assert verdicts == {"trl in the tested range": "fail", "transformers in the tested range": "ok",
                        "torch build": "ok", "cuDNN attention NaN (pytorch#196678)": "ok", "bf16": "ok",
                        "plugins": "ok"}


def test_a_trl_inside_the_bounds_that_failed_the_range_job_is_refused_with_why(fake, capsys):
    fake(CPU_BESIDE_GPU, trl="1.15.0")
    assert main(["doctor", "--no-rewards"]) == 1
    assert _checks(capsys.readouterr().out)["trl in the tested range"] == (
        "FAIL", "trl 1.15.0 is installed; grpo is tested with trl>=1.14.2,!=1.15.*,<1.17 (TRL 1.15's own "
                "GRPOTrainer fails on torch's CPU build (its fused log-probabilities need Triton)) and relies on its "
                "internals: pip install 'trl>=1.14.2,!=1.15.*,<1.17' (grpo train refuses it)")


def test_a_t4_warns_about_bf16_without_failing(fake, capsys):
    fake(T4, trl="1.14.2")
    assert main(["doctor", "--no-rewards"]) == 0  # a warning is said, not failed
    checks = _checks(capsys.readouterr().out)
    assert checks["bf16"][0] == "WARN" and checks["bf16"][1].startswith("this GPU has no bf16 (compute < 8.0)")
    assert checks["cuDNN attention NaN (pytorch#196678)"] == (
        "ok", "torch 2.10.1+cu126 predates the bug (torch 2.11 on)")


def test_a_cpu_torch_beside_an_nvidia_driver_is_named(fake, capsys):
    fake(CPU_BESIDE_GPU)
    main(["doctor", "--no-rewards"])
    checks = _checks(capsys.readouterr().out)
    assert checks["torch build"] == (
        "WARN", "torch 2.13.0+cpu is a CPU build, but this machine has an NVIDIA driver: training runs on the CPU. "
                "Install a CUDA build of torch (pytorch.org's selector) to use the GPU")
    assert checks["cuDNN attention NaN (pytorch#196678)"] == ("skip", "no CUDA device")


def test_a_plugin_problem_fails_the_plugins_check(fake, capsys, monkeypatch):
    from grpo_core.plugin import plugins

    fake(T4)
    monkeypatch.setattr(plugins, "problems", [plugins.PluginProblem("two", "acme-two", "written for API 2.0")])
    assert main(["doctor", "--no-rewards"]) == 1
    assert _checks(capsys.readouterr().out)["plugins"] == (
        "FAIL", "1 problem(s): grpo plugin 'two' (distribution acme-two): written for API 2.0")


def test_a_reward_check_that_hangs_or_scores_wrong_fails(monkeypatch):
    import time

    monkeypatch.setattr(doctor, "REWARD_SECONDS", 0.3)
    hung = doctor._timed("math checker pool", lambda: time.sleep(5))
    assert (hung.verdict, hung.detail) == ("fail", "no result after 0.3 s: it hangs on this machine")
    wrong = doctor._timed("math checker pool", lambda: (False, "math.correctness scored [0.0, 0.0]"))
    assert wrong.verdict == "fail" and wrong.detail.startswith("math.correctness scored [0.0, 0.0] in ")
    assert doctor._timed("code sandbox", lambda: None).verdict == "skip"


def test_the_reward_checks_score_with_the_installed_plugins(register_plugin):
    import grpo_rewards_math

    register_plugin(grpo_rewards_math)
    check = doctor.math_pool_check()
    assert check.verdict == "ok", check
    assert check.detail.startswith("math.correctness scored a right and a wrong answer [1.0, 0.0]")
    assert doctor.sandbox_check().verdict == "skip"  # grpo-rewards-code is not loaded here


def test_doctor_help_imports_neither_torch_nor_trl():
    code = ("import sys\nfrom grpo_core.cli import main\ntry:\n    main(['doctor', '--help'])\nexcept SystemExit:\n"
            "    pass\nprint('HEAVY', sorted(m for m in ('torch', 'trl', 'transformers') if m in sys.modules), "
            "file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "GRPO_PLUGINS": ""})
    assert "--no-rewards" in out.stdout and "Exit 0: no check failed; 1: one did." in " ".join(out.stdout.split())
    assert "HEAVY []" in out.stderr, out.stderr
