"""What a release rests on, checked without building one: the workflows parse and every
command they run exists here (and the cheap ones run), the license is in the root and in
every package and each package's metadata names it, CHANGELOG.md has the release's section,
and the TRL table in docs/trl-versions.md is what grpo-core declares and refuses."""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = {p.name: yaml.safe_load(p.read_text()) for p in sorted((ROOT / ".github" / "workflows").glob("*.yml"))}
PACKAGES = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
APACHE_MD5 = "3b83ef96387f14655fc854ddc3c6bd57"  # apache.org/licenses/LICENSE-2.0.txt, as Debian ships it
TOOLS = {"bash", "python", "grep", "tee", "echo"}  # what a run: line may call besides the repository's files


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def _commands(workflow: dict) -> list[list[str]]:
    """Each command of each run: block, as words (continuations joined; pipes, && and ; split)."""
    out = []
    for step in _steps(workflow):
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            for part in re.split(r"\|\||&&|[|;]", line):
                words = [w for w in shlex.split(part.replace("${{", "'${{").replace("}}", "}}'"))
                         if not re.fullmatch(r"[A-Z_]+=.*", w)]  # VAR=value before a command
                if words:
                    out.append(words)
    return out


def test_the_four_workflows_are_there():
    assert sorted(WORKFLOWS) == ["ci.yml", "release.yml", "trl-range.yml", "wheels.yml"]


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_a_workflow_parses_and_each_job_runs_or_uses_something(name):
    workflow = WORKFLOWS[name]
    assert workflow[True], f"{name}: no triggers"  # YAML 1.1 reads the key `on` as True
    for job_name, job in workflow["jobs"].items():
        assert ("runs-on" in job and job["steps"]) or "uses" in job, f"{name}: job {job_name}"
        for step in job.get("steps", []):
            assert ("run" in step) != ("uses" in step), f"{name}: {step}"


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_every_command_a_workflow_runs_exists_in_the_repository(name):
    commands = _commands(WORKFLOWS[name])
    assert commands, name
    for words in commands:
        assert words[0] in TOOLS, f"{name}: runs {words[0]!r}, neither a known tool nor ours"
        if words[0] in ("bash", "python"):
            target = ROOT / words[1]
            assert target.is_file(), f"{name}: {' '.join(words)}: {words[1]} is not in the repository"
            check = ["bash", "-n", str(target)] if words[0] == "bash" else [sys.executable, "-m", "py_compile",
                                                                              str(target)]
            assert subprocess.run(check, capture_output=True).returncode == 0, f"{words[1]} does not parse"
    for step in [s for w in WORKFLOWS.values() for s in _steps(w)]:
        used = step.get("uses", "")
        assert not used or re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+|release/v1)", used), f"{name}: unpinned {used}"
    for job in WORKFLOWS[name]["jobs"].values():  # a called workflow is one of ours
        if "uses" in job:
            assert (ROOT / job["uses"]).is_file() and "workflow_call" in WORKFLOWS[Path(job["uses"]).name][True]


def test_ci_is_what_the_readme_says_ci_runs():
    assert _commands(WORKFLOWS["ci.yml"]) == [["bash", ".ci/run"]]
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_release_checks_versions_builds_the_wheels_then_publishes_with_trusted_publishing():
    jobs = WORKFLOWS["release.yml"]["jobs"]
    assert WORKFLOWS["release.yml"][True] == {"push": {"tags": ["v*"]}}
    assert jobs["wheels"] == {"needs": "versions", "uses": "./.github/workflows/wheels.yml"}
    publish = jobs["publish"]
    assert publish["needs"] == "wheels" and publish["environment"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing: no token stored
    assert publish["steps"][-1]["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert _commands(WORKFLOWS["wheels.yml"]) == [["bash", "scripts/wheel_check.sh"]]


def _run(*argv: str, **env) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(list(argv), cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def test_the_scripts_the_workflows_call_run_here(tmp_path):
    usage = _run("bash", "scripts/trl_range.sh")
    assert usage.returncode == 2 and "usage: bash scripts/trl_range.sh TRL_VERSION" in usage.stderr
    inside = _run("bash", "scripts/wheel_check.sh", WHEEL_CHECK_DIR=str(ROOT / "build" / "wheel-check-test"))
    assert inside.returncode == 2 and "is inside the repository; use a folder outside it" in inside.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    full = _run("bash", "scripts/wheel_check.sh", WHEEL_CHECK_DIR=str(tmp_path / "full"))
    assert full.returncode == 2 and "is not empty" in full.stderr
    assert _run(sys.executable, "scripts/wheel_contract.py").returncode == 2


def test_release_check_holds_the_tag_to_every_packages_version_and_the_changelog():
    from importlib.metadata import version

    ours = version("grpo-core")
    ok = _run(sys.executable, "scripts/release_check.py", f"v{ours}")
    assert (ok.returncode, ok.stdout.strip()) == (0, f"release_check: 7 packages at {ours}, CHANGELOG.md has its "
                                                     f"section")
    wrong = _run(sys.executable, "scripts/release_check.py", "v9.9.9")
    assert wrong.returncode == 1
    lines = wrong.stdout.strip().splitlines()
    assert lines[0] == f"release_check: grpo-core is version {ours} in packages/grpo-core/pyproject.toml, not 9.9.9"
    assert len(lines) == 8 and lines[-1] == ("release_check: CHANGELOG.md has no '## 9.9.9' section: say what the "
                                             "release changes, per package")
    assert _run(sys.executable, "scripts/release_check.py", "0.1").returncode == 2


def test_every_package_is_built_by_the_wheel_job_and_versioned_by_the_release_check():
    assert len(PACKAGES) == 7 and "grpo-rewards-judge" in PACKAGES  # packages/*/pyproject.toml
    script = (ROOT / "scripts" / "wheel_check.sh").read_text()
    built = re.search(r"^PACKAGES=\(([^)]*)\)", script, re.M)[1].split()
    assert built[0] == "grpo-core" and sorted(built) == PACKAGES  # the contract suite runs on built[1:]
    released = re.search(r"^PACKAGES = \(([^)]*)\)", (ROOT / "scripts" / "release_check.py").read_text(), re.M)[1]
    assert sorted(re.findall(r'"([\w-]+)"', released)) == PACKAGES


def test_the_changelog_has_a_section_per_published_package():
    text = (ROOT / "CHANGELOG.md").read_text()
    release = text.split("\n## 0.1.0", 1)[1].split("\n## ", 1)[0]
    for package in PACKAGES:
        assert f"\n### {package} 0.1.0\n" in release, package


def test_the_license_is_in_the_root_and_every_package_and_each_package_declares_it():
    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.md5(text).hexdigest() == APACHE_MD5
    for package in PACKAGES:
        assert (ROOT / "packages" / package / "LICENSE").read_bytes() == text, package
        pyproject = (ROOT / "packages" / package / "pyproject.toml").read_text()
        assert '\nlicense = "Apache-2.0"\n' in pyproject and '\nlicense-files = ["LICENSE"]' in pyproject, package
        assert 'requires = ["setuptools>=77"]' in pyproject, package  # PEP 639's fields need 77



# ---------------------------------------------------------------- the TRL range

TABLE_PAGE = ROOT / "docs" / "trl-versions.md"


def _table() -> list[dict]:
    """The rows of docs/trl-versions.md's table, as scripts/trl_range.sh printed them."""
    rows = re.findall(r"^\| (\d[\d.]*) \| (\d[\d.]*) \| (pass|fail) \| (pass|fail) \| (pass|fail) \| (accepted|refused) \|",
                      TABLE_PAGE.read_text(), re.M)
    return [dict(zip(("trl", "transformers", "private", "bare", "smoke", "start"), row)) for row in rows]


def _release(version: str) -> tuple[int, ...]:
    parts = [int(p) for p in version.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def test_the_table_measured_the_versions_the_range_job_runs():
    rows = _table()
    matrix = WORKFLOWS["trl-range.yml"]["jobs"]["trl"]["strategy"]["matrix"]["include"]
    assert sorted({r["trl"] for r in rows}) == sorted({m["trl"] for m in matrix})
    lowest = re.search(r'"transformers>=([\d.]+),', (ROOT / "packages/grpo-core/pyproject.toml").read_text())[1]
    pinned = [m["transformers"] for m in matrix if "transformers" in m]
    assert _release(lowest) in [_release(p) for p in pinned], pinned  # 5.3.0 is 5.3
    for version in pinned:
        assert any(r["transformers"] == version for r in rows), f"no row for transformers {version}"


def test_what_passes_is_accepted_at_start_and_what_fails_is_refused():
    from grpo_core.run.versions import version_problem

    for row in _table():
        works = all(row[k] == "pass" for k in ("private", "bare", "smoke"))
        assert (row["start"] == "accepted") == works, row  # what the job saw
        now = version_problem("trl", row["trl"]) is None and version_problem("transformers", row["transformers"]) is None
        assert now == works, (row, "grpo_core.run.versions.TESTED/BROKEN disagree with the table")


def test_the_packaging_declares_the_range_the_start_check_enforces():
    from grpo_core.run.versions import TESTED, requirement

    pyproject = (ROOT / "packages/grpo-core/pyproject.toml").read_text()
    for dist in TESTED:
        assert f'"{requirement(dist)}"' in pyproject, (dist, requirement(dist))
    assert requirement("trl") == "trl>=1.14.2,!=1.15.*,<1.17"  # worked out from the table by hand
