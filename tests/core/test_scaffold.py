"""`grpo plugin new`: the names it derives, what it refuses, and the package it
writes really installing, passing its own tests, `grpo rewards check` and a
two-step training run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from grpo_core.authoring.scaffold import PluginNames, create, plugin_names, render
from grpo_core.errors import GrpoError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, names", [
    ("acme", PluginNames("grpo-acme", "grpo_acme", "acme")),
    ("my-rewards", PluginNames("grpo-my-rewards", "grpo_my_rewards", "my_rewards")),
    ("my_rewards", PluginNames("grpo-my-rewards", "grpo_my_rewards", "my_rewards")),
    ("grpo-my-rewards", PluginNames("grpo-my-rewards", "grpo_my_rewards", "my_rewards")),
    ("med2", PluginNames("grpo-med2", "grpo_med2", "med2")),
])
def test_names_follow_the_plugin_conventions(name, names):
    assert plugin_names(name) == names


@pytest.mark.parametrize("bad", ["Acme", "2fast", "my--rewards", "acme.x", "my rewards", "-acme", ""])
def test_a_bad_name_is_refused_with_the_rule(bad):
    with pytest.raises(GrpoError) as info:
        plugin_names(bad)
    assert str(info.value).startswith(f"plugin name {bad!r} must be lower-case letters and digits")
    assert "(e.g. 'acme' or 'my-rewards')" in str(info.value)


def test_an_existing_directory_is_never_overwritten(tmp_path):
    target = tmp_path / "grpo-acme"
    target.mkdir()
    (target / "mine.py").write_text("keep me")
    with pytest.raises(GrpoError) as info:
        create("acme", target)
    assert str(info.value) == (f"{target} already exists; grpo plugin new writes a new directory and never "
                               f"overwrites one. Remove it, or give another path with --dir.")
    assert [p.name for p in target.iterdir()] == ["mine.py"]
    assert (target / "mine.py").read_text() == "keep me"


@pytest.mark.parametrize("name, owner", [("math", "grpo-rewards-math"), ("length", "grpo-rewards-format"),
                                         ("datasets", "grpo-datasets"), ("code", "grpo-rewards-code")])
def test_a_namespace_of_ours_is_refused(tmp_path, name, owner):
    with pytest.raises(GrpoError) as info:
        create(name, tmp_path / "out")
    assert str(info.value).startswith(f"the reward namespace '{name}' belongs to {owner}")
    assert f"Pick another NAME, e.g. 'acme-{name}'." in str(info.value)
    assert not (tmp_path / "out").exists()


def test_a_namespace_an_installed_plugin_uses_is_refused(tmp_path, monkeypatch):
    from .fakedist import REWARD_MODULE, make_dist

    site = tmp_path / "site"
    make_dist(site, "zeta-rewards", {"zeta": "zeta_rewards"},
              {"zeta_rewards": REWARD_MODULE.format(func="z", name="zeta.z", desc="z")})
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(GrpoError, match="^the reward namespace 'zeta' belongs to zeta-rewards"):
        create("zeta", tmp_path / "out")


def test_the_package_has_the_entry_point_a_formula_and_contract_tests():
    files = render(plugin_names("my-rewards"))
    assert sorted(files) == [".github/workflows/grpo.yml", "README.md", "check.yaml", "data/sample.jsonl",
                             "pyproject.toml", "src/grpo_my_rewards/__init__.py", "tests/test_contract.py",
                             "train.yaml"]
    pyproject = files["pyproject.toml"]
    assert '\nname = "grpo-my-rewards"\n' in pyproject
    assert '\n[project.entry-points.grpo]\nmy_rewards = "grpo_my_rewards"\n' in pyproject
    # the releases that provide plugin API 1.x: this one's minor on, below grpo-core 1 (worked out by hand
    # from grpo-core 0.1.0; the API's major changes only with grpo-core's)
    assert '\ndependencies = ["grpo-core>=0.1,<1"]\n' in pyproject
    module = files["src/grpo_my_rewards/__init__.py"]
    assert '\nGRPO_PLUGIN_API = "1.0"\n' in module
    assert '"""Full marks up to max_words words, then less: min(1, max(0, 2 - words / max_words)).' in module
    assert 'register("my_rewards.concise", concise)' in module
    tests = files["tests/test_contract.py"]
    assert "class TestConciseContract(RewardContract):" in tests
    assert 'reward = "my_rewards.concise"' in tests and "plugin = grpo_my_rewards" in tests


def test_the_cli_writes_the_package_and_says_what_to_run_next(tmp_path, capsys):
    from grpo_core.cli import main

    assert main(["plugin", "new", "acme-x", "--dir", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (f"Created {tmp_path / 'p'}/: distribution grpo-acme-x, module grpo_acme_x, "
                                   f"rewards acme_x.*")
    assert f'  pip install -e "{tmp_path / "p"}[test]"' in out
    assert "  grpo rewards check acme_x.concise\n" in out
    assert (tmp_path / "p" / "src" / "grpo_acme_x" / "__init__.py").is_file()
    assert main(["plugin", "new", "acme-x", "--dir", str(tmp_path / "p")]) == 2  # and not again
    assert "already exists" in capsys.readouterr().err


# ---------------------------------------------------------------- installed for real


def _venv_on_this_env(path: Path) -> Path:
    """A throwaway venv that sees this environment's packages (like --system-site-packages
    would for a system Python), so nothing is downloaded and this env stays as it was."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in sorted(here))
    Path(purelib, "_this_env.pth").write_text(lines)
    return python


def _run(python: Path, *args: str, cwd: Path, timeout: int = 180) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GRPO_PLUGINS", "PYTHONPATH")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    out = subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, f"{' '.join(args)} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def test_a_scaffolded_plugin_installs_next_to_a_plain_grpo_core_and_passes_tests_check_and_training(
        tmp_path, tiny_model):
    from importlib.metadata import PackageNotFoundError, distribution

    _, pkg, _ = create("my-rewards", tmp_path / "grpo-my-rewards")
    python = _venv_on_this_env(tmp_path / "venv")
    pip = ("-m", "pip", "install", "-q", "--no-index", "--no-build-isolation")
    # grpo-core as the README installs it (a plain, non-editable install from the checkout),
    # then the plugin as its README says; its dependency on grpo-core is met, not downloaded
    _run(python, *pip, "--no-deps", str(ROOT / "packages" / "grpo-core"), cwd=tmp_path)
    _run(python, *pip, "-e", str(pkg), cwd=tmp_path)
    core = _run(python, "-c", "import grpo_core; print(grpo_core.__file__)", cwd=tmp_path).stdout
    assert str(tmp_path / "venv") in core  # the installed copy, not the checkout's

    # every installed plugin loads (GRPO_PLUGINS unset), as on the author's machine
    tests = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=pkg)
    assert "11 passed" in tests.stdout  # 9 contract checks and the two value tests
    check = _run(python, "-m", "grpo_core", "rewards", "check", "my_rewards.concise", "--max_words", "40",
                 cwd=pkg)
    assert check.stdout.splitlines()[-1] == "9 passed, 0 failed"
    # its CI's other gates: its sample rows pass grpo check; it type-checks against the installed
    # grpo-core (whose py.typed came with it)
    assert _run(python, "-m", "grpo_core", "check", "check.yaml", cwd=pkg).stdout.splitlines()[-1] == "check: ok"
    assert "Success: no issues found in 2 source files" in _run(python, "-m", "mypy", cwd=pkg).stdout
    listed = json.loads(_run(python, "-m", "grpo_core", "rewards", "list", "--json", cwd=pkg).stdout)
    assert {"name": "my_rewards.concise", "distribution": "grpo-my-rewards"}.items() <= next(
        r for r in listed if r["name"] == "my_rewards.concise").items()

    # the package's own train.yaml, shrunk to two steps of the tiny model (grpo check runs first)
    train = _run(python, "-m", "grpo_core", "train", "train.yaml", "--model.id", str(tiny_model),
                 "--max_steps", "2", "--per_device_train_batch_size", "4", "--num_generations", "4",
                 "--max_completion_length", "8", "--save_strategy", "no", "--report_to", "none",
                 "--output_dir", str(tmp_path / "out"), cwd=pkg)
    assert "grpo check: ok" in train.stdout
    steps = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert {"rewards/my_rewards.concise/mean", "rewards/math.correctness/mean"} <= set(steps[0])
    assert (tmp_path / "out" / "adapter" / "adapter_config.json").is_file()

    with pytest.raises(PackageNotFoundError):  # this environment never saw it
        distribution("grpo-my-rewards")


def test_every_command_the_package_tells_its_author_to_run_exists(capsys):
    from grpo_core.cli import main

    files = render(plugin_names("my-rewards"))
    named = set(re.findall(r"^[#\s]*grpo ([a-z-]+) ([a-z-]+)", files["README.md"] + files["train.yaml"], re.M))
    assert {("rewards", "show"), ("rewards", "check"), ("check", "train"), ("train", "train")} <= named
    for words in sorted(named):
        with pytest.raises(SystemExit) as exited:
            main([*words, "--help"])
        assert exited.value.code == 0, words
    capsys.readouterr()


# ---------------------------------------------------------------- the package's CI


def _workflow_commands(files: dict[str, str]) -> list[str]:
    """The shell lines the workflow runs after installing: what gates the package."""
    import yaml

    workflow = yaml.safe_load(files[".github/workflows/grpo.yml"])
    steps = workflow["jobs"]["check"]["steps"]
    lines = [line for step in steps if "run" in step for line in step["run"].splitlines() if line.strip()]
    return [line for line in lines if "pip install" not in line]


def test_the_workflow_is_valid_yaml_that_installs_the_package_and_names_the_gates():
    import yaml

    files = render(plugin_names("my-rewards"))
    workflow = yaml.safe_load(files[".github/workflows/grpo.yml"])
    assert set(workflow[True]) == {"push", "pull_request"}  # YAML 1.1 reads the key `on` as True
    steps = workflow["jobs"]["check"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[1]["uses"].startswith("actions/setup-python@")
    install = steps[2]["run"]
    assert "--index-url https://download.pytorch.org/whl/cpu" in install  # never a CUDA torch
    assert "${{ vars.GRPO_CORE || 'grpo-core>=0.1,<1' }}" in install and 'pip install -e ".[test]"' in install
    assert _workflow_commands(files) == [
        "python -m pytest", "python -m mypy",
        "grpo rewards check my_rewards.concise --json reports/contract-my_rewards.concise.json",
        "grpo check check.yaml --json reports/check.json"]
    assert steps[-1]["if"] == "always()" and steps[-1]["with"]["path"] == "reports/"


def _gate(pkg: Path, site: Path, line: str) -> subprocess.CompletedProcess:
    """One workflow line run as CI would, against the package on PYTHONPATH (an entry point
    declared in ``site``), grpo as ``python -m grpo_core``."""
    argv = line.split()
    argv = [sys.executable, "-m", "grpo_core", *argv[1:]] if argv[0] == "grpo" else [sys.executable, *argv[1:]]
    if argv[2] == "pytest":
        argv += ["-q", "-p", "no:cacheprovider"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PYTHONPATH=f"{site}{os.pathsep}{pkg / 'src'}", GRPO_PLUGINS="grpo-ci-demo", HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return subprocess.run(argv, cwd=pkg, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(600)
def test_the_workflows_gates_pass_the_package_and_fail_a_planted_bug(tmp_path):
    from .fakedist import make_dist

    names, pkg, _ = create("ci-demo", tmp_path / "grpo-ci-demo")
    site = tmp_path / "site"
    make_dist(site, names.distribution, {names.namespace: names.package}, {})
    lines = _workflow_commands(render(names))
    for line in lines:
        out = _gate(pkg, site, line)
        assert out.returncode == 0, f"{line}: {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    contract = json.loads((pkg / "reports" / "contract-ci_demo.concise.json").read_text())
    assert (contract["ok"], contract["exit_code"], contract["passed"], contract["failed"]) == (True, 0, 9, 0)
    check = json.loads((pkg / "reports" / "check.json").read_text())
    assert [stage["ok"] for stage in check] == [True] and check[0]["gold_self_test"][0]["reward"] == "ci_demo.concise"

    # the planted bug: one score short on every batch of more than one completion
    module = pkg / "src" / names.package / "__init__.py"
    good = "    return [min(1.0, max(0.0, 2.0 - len(c.split()) / max_words)) for c in completions]"
    assert good in module.read_text()
    module.write_text(module.read_text().replace(good, good + "[: max(1, len(completions) - 1)]"))
    codes = {line.split()[2] if line.startswith("python") else " ".join(line.split()[:2]): _gate(pkg, site, line)
             for line in lines}
    assert {k: v.returncode for k, v in codes.items()} == {
        "pytest": 1, "mypy": 0, "grpo rewards": 1, "grpo check": 1}, {k: v.stdout[-800:] for k, v in codes.items()}
    contract = json.loads((pkg / "reports" / "contract-ci_demo.concise.json").read_text())
    assert contract["ok"] is False and contract["exit_code"] == 1
    assert {c["check"]: c["message"] for c in contract["checks"] if not c["ok"]}["plain completions"] == (
        "returned 1 values for 2 completions")
    check = json.loads((pkg / "reports" / "check.json").read_text())
    assert check[0]["ok"] is False and check[0]["reward_errors"][0]["reward"] == "ci_demo.concise"
