"""How a sandbox process is started, per isolation backend.

- ``bwrap``: bubblewrap with new user, pid, network, ipc, uts and mount
  namespaces; only the system directories and the Python installation are
  visible, read-only; ``/sandbox`` (the working directory) and ``/tmp`` are
  fresh size-limited tmpfs; no environment variables but a few we set.
- ``unshare``: util-linux ``unshare`` (unprivileged user namespaces) with the
  same namespaces; the harness itself builds the private root (tmpfs, read-only
  binds, chroot) before it drops its capabilities.
- ``rlimits``: a plain child process: resource limits, a fresh working
  directory, an empty environment and the seccomp filter, but the host's file
  system and process table stay visible.

Every backend also gets the harness's own layers: rlimits, no capabilities,
seccomp (where the architecture is known), and a kill of the whole process group
at the wall-clock limit.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

NAMES = ("bwrap", "unshare", "rlimits")
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
PYTHON_FLAGS = ("-S", "-s", "-B")  # no site-packages, no user site, no .pyc files
TMPFS_MB = 64


# Reads (harness code object, job) from stdin and runs it; the code object is marshalled by
# this interpreter for this interpreter (the sandbox runs the trainer's base Python).
BOOTSTRAP = ("import marshal, sys\nh, p = marshal.loads(sys.stdin.buffer.read())\n"
             "g = {'__name__': 'grpo_code_sandbox_harness', '__builtins__': __builtins__}\n"
             "exec(h, g)\ng['_main_local'](p)\n")


@lru_cache(maxsize=1)
def harness_source() -> str:
    return (Path(__file__).with_name("_harness.py")).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def harness_code():
    """The harness compiled once (about 10 ms saved on every run)."""
    return compile(harness_source(), "<grpo sandbox harness>", "exec", dont_inherit=True)


def interpreter() -> str:
    """The base interpreter (a venv's python is a link to it): the sandbox gets the
    standard library only."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def env(home: str, tmp: str) -> dict[str, str]:
    """The whole environment of a sandboxed process: nothing of the trainer's."""
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1", "HOME": home, "TMPDIR": tmp}


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@lru_cache(maxsize=1)
def visible_paths() -> tuple[tuple, ...]:
    """What a private root shows: ``("dir", path)`` bound read-only, ``("link", target,
    path)`` recreated. System directories as on the host, plus the interpreter's
    installation when it lives elsewhere (pyenv, conda, a uv-managed Python)."""
    out: list[tuple] = []
    covered: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            out.append(("link", os.readlink(d), d))
        elif os.path.isdir(d):
            out.append(("dir", d))
            covered.append(d)
    extra = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
    extra.add(os.path.dirname(interpreter()))
    for p in sorted(extra):
        if os.path.isdir(p) and not _under(p, covered):
            out.append(("dir", p))
            covered.append(p)
    return tuple(out)


@dataclass(frozen=True)
class Backend:
    """Builds the command line and the harness's extra instructions for one run."""

    name: str

    @property
    def host_dir(self) -> bool:
        """A fresh host directory per run: the working directory (rlimits) or the
        mount point of the private root (unshare)."""
        return self.name in ("unshare", "rlimits")

    def argv(self, run_id: str = "", seccomp_fd: int | None = None) -> list[str]:
        """The command line; ``run_id`` ends it (as ``sys.argv[1]``), so the run's
        processes can be found in /proc after a kill. ``seccomp_fd`` (bwrap): a pipe
        holding :func:`bwrap_filter`, which bubblewrap loads before it execs Python."""
        python = [interpreter(), *PYTHON_FLAGS, "-c", BOOTSTRAP, run_id]
        if self.name == "bwrap":
            loaded = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
            return _bwrap_argv() + loaded + ["--", *python]
        if self.name == "unshare":
            # setpriv makes unshare die with the trainer (kill -9 included), and --kill-child
            # takes the harness with it
            return ["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--user", "--map-root-user", "--mount",
                    "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--", *python]
        return python

    def payload(self, host_dir: str | None, filter_loaded: bool = False) -> dict:
        if self.name == "bwrap":  # bubblewrap drops the capabilities (and loads the filter): the harness checks
            return {"outside": ["caps", "seccomp"] if filter_loaded else ["caps"]}
        if self.name == "unshare":
            return {"chroot": {"root": host_dir, "binds": [list(b) for b in visible_paths()],
                               "tmpfs_mb": TMPFS_MB}}
        if self.name == "rlimits":
            return {"die_with_parent": True}
        return {}

    def environment(self, host_dir: str | None) -> dict[str, str]:
        if self.name == "rlimits":
            return env(host_dir or "/", host_dir or "/tmp")
        return env("/sandbox", "/tmp")


def _bwrap_argv() -> list[str]:
    # no --new-session: the run already has its own session (and no terminal), and keeping
    # the sandboxed process in the run's process group lets one killpg reach it at once
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--hostname", "sandbox"]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
    for entry in visible_paths():
        if entry[0] == "link":
            argv += ["--symlink", entry[1], entry[2]]
        else:
            argv += ["--ro-bind", entry[1], entry[1]]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if bwrap_has_size():
        argv += ["--size", str(TMPFS_MB << 20)]
    argv += ["--tmpfs", "/sandbox", "--chdir", "/sandbox", "--clearenv"]
    for key, value in env("/sandbox", "/tmp").items():
        argv += ["--setenv", key, value]
    return argv


@lru_cache(maxsize=1)
def bwrap_filter() -> bytes | None:
    """The harness's seccomp filter for bubblewrap to load (``--seccomp``): the code runs
    as pid 2 of its namespace, and exec stays allowed (bubblewrap execs Python after
    loading it). Loaded there, the harness needs no ctypes: about 5 ms less per run."""
    from ._harness import seccomp_bytes

    return seccomp_bytes(2, allow_exec=True)


@lru_cache(maxsize=1)
def bwrap_has_size() -> bool:
    """``--size`` (a tmpfs size limit) arrived in bubblewrap 0.5."""
    import subprocess

    try:
        out = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in out.stdout + out.stderr


def missing_tool(name: str) -> str | None:
    """Why ``name`` cannot be tried at all, or None."""
    if not sys.platform.startswith("linux"):
        return f"{name} needs Linux (this is {sys.platform})"
    if name == "bwrap" and shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if name == "unshare":
        lacking = [tool for tool in ("unshare", "setpriv") if shutil.which(tool) is None]
        if lacking:
            return f"{' and '.join(lacking)} (util-linux) not installed"
    return None


__all__ = ["NAMES", "Backend", "BOOTSTRAP", "harness_source", "harness_code", "bwrap_filter", "interpreter",
           "visible_paths", "missing_tool"]
