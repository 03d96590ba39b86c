"""Fake installed distributions (a dist-info folder + module on a path) for
testing entry-point discovery without pip."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def make_dist(site: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """Write ``modules`` (name -> source) and a dist-info for ``dist`` declaring
    ``entry_points`` (name -> module) in group ``grpo`` under ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (site / f"{name}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    eps = "[grpo]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(eps)


def run_grpo(args: list[str], site: Path | None = None, plugins: str | None = None, timeout=120):
    """Run the ``grpo`` CLI in a subprocess with ``site`` on PYTHONPATH."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = str(site) + os.pathsep + env.get("PYTHONPATH", "")
    if plugins is None:
        env.pop("GRPO_PLUGINS", None)
    else:
        env["GRPO_PLUGINS"] = plugins
    return subprocess.run(
        [sys.executable, "-m", "grpo_core", *args],
        capture_output=True, text=True, env=env, timeout=timeout,
    )


REWARD_MODULE = """
from grpo_core import hookimpl

def {func}(completions, **kwargs):
    return [float(len(c)) for c in completions]

@hookimpl
def register_rewards(register):
    register("{name}", {func}, description="{desc}")
"""
