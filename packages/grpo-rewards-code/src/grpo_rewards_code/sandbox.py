"""The sandbox: run untrusted Python (a completion's code plus a row's tests) in
separate, confined processes, several at a time.

``run(jobs, limits, workers, sandbox)`` returns one :class:`Result` per
:class:`Job`. ``sandbox`` picks the isolation: ``auto`` (the default, or
``GRPO_CODE_SANDBOX``) walks :data:`backends.BACKENDS` (strongest first) and
takes the first that runs a trivial job on this host: ``bwrap`` (bubblewrap),
else ``unshare`` (unprivileged user namespaces), else ``rlimits`` alone, with a
one-time warning that names what is missing when it has to take one without
namespaces. Naming a backend that does not work here is an
error that says why. ``sandboxfusion`` sends the jobs to a SandboxFusion-style
HTTP service (``endpoint=``, or ``GRPO_CODE_ENDPOINT``) instead.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Sequence

from . import backends
from .jobs import Job, Limits, Result

ENV_BACKEND = "GRPO_CODE_SANDBOX"
ENV_WORKERS = "GRPO_CODE_WORKERS"
ENV_ENDPOINT = "GRPO_CODE_ENDPOINT"
MAX_DEFAULT_WORKERS = 16
PROBE = (Job("x = 1", ("assert x == 1",)), Limits(timeout=30.0))

log = logging.getLogger("grpo_rewards_code")
_lock = threading.Lock()
_probes: dict[str, tuple[str | None, dict]] = {}
_warned: set[str] = set()


class SandboxWarning(UserWarning):
    """The sandbox runs with less isolation than this host could give."""


class SandboxUnavailable(RuntimeError, ValueError):
    """A sandbox that was asked for by name does not work on this host (a ValueError
    too: binding a reward to it fails like any bad parameter)."""


def default_workers() -> int:
    """``GRPO_CODE_WORKERS``, else usable CPUs divided by ``LOCAL_WORLD_SIZE`` (processes
    per host under torchrun/accelerate), at most 16."""
    from grpo_core.workers import default_workers as rule

    return rule(ENV_WORKERS, "sandboxes at a time", MAX_DEFAULT_WORKERS)


def resolve_workers(workers: int | None) -> int:
    from grpo_core.workers import check_workers

    n = check_workers(workers, "sandboxes at a time")
    return default_workers() if n is None else n


def choices_now() -> tuple[str, ...]:
    """What ``sandbox=`` accepts: auto, each backend of :data:`backends.BACKENDS`, sandboxfusion."""
    return ("auto", *backends.names(), "sandboxfusion")


def check_choice(sandbox: str | None, endpoint: str | None = None) -> str:
    """The sandbox name in force (argument, else ``GRPO_CODE_SANDBOX``, else auto), checked."""
    name = sandbox or os.environ.get(ENV_BACKEND, "").strip() or "auto"
    choices = choices_now()
    if name not in choices:
        raise ValueError(f"sandbox={name!r}: choose one of {', '.join(choices)} "
                         f"(auto = the strongest that works here).")
    if name == "sandboxfusion" and not (endpoint or os.environ.get(ENV_ENDPOINT)):
        raise ValueError("sandbox='sandboxfusion' needs endpoint='http://HOST:PORT' (the service's base URL) "
                         f"or {ENV_ENDPOINT}.")
    return name


def probe(name: str) -> str | None:
    """None when backend ``name`` runs a trivial job on this host, else why it does not."""
    with _lock:
        if name in _probes:
            return _probes[name][0]
    candidate = backends.get(name)
    reason = candidate.missing()
    layers: dict = {}
    if reason is None:
        from .runner import run_jobs

        job, limits = PROBE
        res = run_jobs([job], candidate, limits, 1)[0]
        layers = res.layers
        if res.status != "ok" or res.tests != ["pass"]:
            reason = res.detail or f"the test job ended '{res.cause}'"
        else:
            reason = candidate.probe_problem(layers)
    with _lock:
        _probes[name] = (reason, layers)
    return reason


def layers(name: str) -> dict:
    """The harness's layers a probe of ``name`` reported (``seccomp``, ``caps``, ``chroot``)."""
    probe(name)
    return dict(_probes[name][1])


def backend(name: str | None = None) -> backends.Backend:
    """The local backend to use (see the module docstring)."""
    name = check_choice(name)
    if name == "sandboxfusion":
        raise ValueError("sandbox='sandboxfusion' is remote; use grpo_rewards_code.remote.")
    if name != "auto":
        reason = probe(name)
        if reason:
            raise SandboxUnavailable(f"sandbox '{name}' does not work on this host: {reason}. "
                                     f"Use sandbox='auto' to take the strongest one that does.")
        chosen = backends.get(name)
        if not chosen.namespaces:
            _note_once(chosen, {"sandbox": f"'{name}' was named"})
        return chosen
    reasons: dict[str, str | None] = {}
    for candidate in backends.BACKENDS:
        reasons[candidate.name] = probe(candidate.name)
        if reasons[candidate.name] is None:
            if not candidate.namespaces:
                _refuse_root_without_seccomp(candidate, reasons)
            _note_once(candidate, reasons)
            return candidate
    raise SandboxUnavailable(f"no sandbox works on this host; even a plain child process failed: "
                             f"{reasons[backends.BACKENDS[-1].name]}")


def _refuse_root_without_seccomp(chosen: backends.Backend, reasons: dict) -> None:
    if os.geteuid() == 0 and _probes[chosen.name][1].get("seccomp") != "1":
        why = "; ".join(f"{k}: {v}" for k, v in reasons.items() if v)
        raise SandboxUnavailable(
            f"refusing to run model code as root with neither namespaces ({why}) nor a seccomp filter "
            f"(not available here): it could signal, rewrite or delete anything on this machine. Install "
            f"bubblewrap, allow unprivileged user namespaces or train as an unprivileged user; to accept the "
            f"risk, name sandbox='{chosen.name}' explicitly.")


def _note_once(chosen: backends.Backend, reasons: dict) -> None:
    """The backend in force, said once per process: logged when it has namespaces, else a warning."""
    with _lock:
        if chosen.name in _warned:
            return
        _warned.add(chosen.name)
    seccomp = _probes[chosen.name][1].get("seccomp") == "1"
    why = "; ".join(f"{k}: {v}" for k, v in reasons.items() if v)
    if chosen.namespaces:
        log.info("grpo-rewards-code: sandbox '%s' (%s%s%s)", chosen.name, chosen.guarantees,
                 ", seccomp" if seccomp else "", f"; {why}" if why else "")
        return
    kept = ("seccomp still refuses sockets, new processes and signals to other processes"
            if seccomp else "no seccomp filter either: it can also open sockets, start processes and signal "
            "your processes")
    warnings.warn(
        f"grpo-rewards-code runs model code with {chosen.guarantees} ({why}). Without namespaces "
        f"the code can read and write your files under your user, the trainer's /proc entries (its "
        f"environment, tokens included) too; {kept}. Install bubblewrap "
        f"(apt-get install bubblewrap) or allow unprivileged user namespaces "
        f"(sysctl kernel.unprivileged_userns_clone=1; in Docker, a seccomp profile that permits them).",
        SandboxWarning, stacklevel=3)


def run(jobs: Sequence[Job], limits: Limits | None = None, workers: int | None = None,
        sandbox: str | None = None, endpoint: str | None = None) -> list[Result]:
    """Run ``jobs``; one Result each, in order. Never raises for what the code does."""
    limits = limits or Limits()
    n = resolve_workers(workers)
    name = check_choice(sandbox, endpoint)
    jobs = list(jobs)
    if not jobs:
        return []
    if name == "sandboxfusion":
        from . import remote

        return remote.run_jobs(jobs, endpoint or os.environ[ENV_ENDPOINT], limits, n)
    from .runner import run_jobs

    return run_jobs(jobs, backend(name), limits, n)


def reset() -> None:
    """Forget probe results and warnings (tests; after installing bubblewrap)."""
    with _lock:
        _probes.clear()
        _warned.clear()


__all__ = ["run", "backend", "probe", "layers", "default_workers", "resolve_workers", "check_choice", "choices_now",
           "SandboxWarning", "SandboxUnavailable", "reset", "Job", "Limits", "Result"]
