"""Fixtures for the grpo-rewards-code tests: the plugin registered in process, each
sandbox backend (skipped only where this host lacks it, with the reason), a count
of sandbox processes, fixture files in the hub's layout, and ``grpo train`` run
in process on the tiny model."""

from __future__ import annotations

import os
import warnings

import pytest

import grpo_rewards_code
from grpo_rewards_code import backends, sandbox
from grpo_rewards_code.runner import our_processes

BACKENDS = backends.names()
EXPECT_ENV = "GRPO_CODE_EXPECT"  # backends that must work here, comma-separated (default: any with namespaces)


def expected(value: str | None) -> tuple[str, ...]:
    """The backends ``GRPO_CODE_EXPECT`` names; () when unset (then: any one with namespaces)."""
    return tuple(n.strip() for n in (value or "").split(",") if n.strip())


def coverage_problem(probe, expect: str | None) -> str | None:
    """Why the sandbox tests have not shown real isolation on this host, or None: every
    backend ``expect`` names must work, and with none named, one with namespaces must."""
    named = expected(expect)
    if named:
        broken = {n: probe(n) for n in named if probe(n)}
        return ("; ".join(f"{n}: {why}" for n, why in broken.items()) + f" (named in {EXPECT_ENV})"
                if broken else None)
    real = [b.name for b in backends.BACKENDS if b.namespaces]
    why = {n: probe(n) for n in real}
    if any(reason is None for reason in why.values()):
        return None
    return (f"no backend with namespaces works here ({'; '.join(f'{n}: {r}' for n, r in why.items())}), so the "
            f"hostile programs met resource limits only. Fix the host (install bubblewrap, allow user "
            f"namespaces), or set {EXPECT_ENV}=rlimits to accept testing without namespaces.")


@pytest.fixture
def code_plugin(register_plugin):
    register_plugin(grpo_rewards_code, name="code")


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each local backend by name; skipped when this host lacks it (the probe says why), but
    failed when ``GRPO_CODE_EXPECT`` names it."""
    reason = sandbox.probe(request.param)
    if reason and request.param in expected(os.environ.get(EXPECT_ENV)):
        pytest.fail(f"sandbox '{request.param}' is named in {EXPECT_ENV} but does not work here: {reason}")
    if reason:
        pytest.skip(f"sandbox '{request.param}' does not work on this host: {reason}")
    with warnings.catch_warnings():  # naming rlimits warns once per process: here, not in the test
        warnings.simplefilter("ignore", sandbox.SandboxWarning)
        sandbox.backend(request.param)
    return request.param


def sandbox_pids() -> set[int]:
    """Processes anywhere on the host (reparented or not) that belong to sandbox runs
    this test process started: what a leak would leave behind. Other processes'
    sandboxes (a suite running beside this one) are not counted."""
    return set(our_processes())


def children() -> set[int]:
    """Live (non-zombie) descendants of this test process."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - mine
        mine |= frontier
    return mine


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """A private datasets cache, so fixture files never meet a stale cache entry."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets-cache")
    datasets.disable_progress_bars()


@pytest.fixture
def load(code_plugin, hf_cache):
    """``grpo_core.load_dataset`` with the code plugin registered."""
    import grpo_core

    return grpo_core.load_dataset


class Metrics:
    """What a reward logs through TRL's ``log_metric`` / ``log_extra``."""

    def __init__(self):
        self.metrics: dict[str, float] = {}
        self.extra: dict[str, list] = {}

    def kwargs(self) -> dict:
        return {"log_metric": self.metrics.__setitem__, "log_extra": self.extra.__setitem__}


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()
