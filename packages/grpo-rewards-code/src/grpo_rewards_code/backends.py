"""How a sandbox process is started: one class per isolation backend, in one list
(:data:`BACKENDS`, strongest first).

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
from functools import lru_cache
from pathlib import Path

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


def python_argv(run_id: str) -> list[str]:
    """The sandboxed interpreter's command line; ``run_id`` ends it (as ``sys.argv[1]``), so
    the run's processes can be found in /proc after a kill."""
    return [interpreter(), *PYTHON_FLAGS, "-c", BOOTSTRAP, run_id]


class Backend:
    """One isolation backend: what it needs on the host, how it wraps the sandboxed
    interpreter's command line, and what it guarantees.

    To add one, subclass this and put an instance in :data:`BACKENDS`, which is
    ordered strongest first: ``auto`` takes the first that passes its probe,
    ``sandbox=NAME`` picks one by name, and nothing else compares names.
    """

    name: str = ""
    guarantees: str = ""  # in words, for the log line naming the backend in force
    namespaces: bool = True  # hides the host's files and processes; auto warns when it has to take one without
    host_dir: bool = False  # a fresh host directory per run (the working directory or a private root's mount point)

    def missing(self) -> str | None:
        """Why it cannot even be tried on this host (a tool or the OS missing), or None."""
        if not sys.platform.startswith("linux"):
            return f"{self.name} needs Linux (this is {sys.platform})"
        return None

    def probe_problem(self, layers: dict) -> str | None:
        """After the probe job passed: a layer it promises that the harness did not report, or None."""
        return None

    def seccomp_filter(self) -> bytes | None:
        """A seccomp filter the backend loads itself before Python starts (passed as a pipe), or None."""
        return None

    def argv(self, run_id: str = "", seccomp_fd: int | None = None) -> list[str]:
        """The command line (``seccomp_fd``: a pipe holding :meth:`seccomp_filter`)."""
        raise NotImplementedError

    def payload(self, host_dir: str | None, filter_loaded: bool = False) -> dict:
        """The harness's extra instructions for one run."""
        return {}

    def environment(self, host_dir: str | None) -> dict[str, str]:
        return env("/sandbox", "/tmp")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Bwrap(Backend):
    """bubblewrap: new user, pid, network, ipc, uts and mount namespaces, a read-only view of
    the system, fresh tmpfs working directories; it drops the capabilities and loads the filter."""

    name = "bwrap"
    guarantees = "bubblewrap namespaces"

    def missing(self) -> str | None:
        if super().missing() or shutil.which("bwrap"):
            return super().missing()
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"

    def seccomp_filter(self) -> bytes | None:
        return bwrap_filter()

    def argv(self, run_id: str = "", seccomp_fd: int | None = None) -> list[str]:
        loaded = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
        return _bwrap_argv() + loaded + ["--", *python_argv(run_id)]

    def payload(self, host_dir: str | None, filter_loaded: bool = False) -> dict:
        return {"outside": ["caps", "seccomp"] if filter_loaded else ["caps"]}  # the harness checks them


class Unshare(Backend):
    """util-linux unshare (unprivileged user namespaces), the same namespaces; the harness
    builds the private root itself."""

    name = "unshare"
    guarantees = "user namespaces"
    host_dir = True

    def missing(self) -> str | None:
        lacking = [tool for tool in ("unshare", "setpriv") if shutil.which(tool) is None]
        if super().missing() or not lacking:
            return super().missing()
        return f"{' and '.join(lacking)} (util-linux) not installed"

    def probe_problem(self, layers: dict) -> str | None:
        return None if layers.get("chroot") == "1" else "the private root was not built"

    def argv(self, run_id: str = "", seccomp_fd: int | None = None) -> list[str]:
        # setpriv makes unshare die with the trainer (kill -9 included), and --kill-child takes the harness with it
        return ["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--user", "--map-root-user", "--mount",
                "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--", *python_argv(run_id)]

    def payload(self, host_dir: str | None, filter_loaded: bool = False) -> dict:
        return {"chroot": {"root": host_dir, "binds": [list(b) for b in visible_paths()], "tmpfs_mb": TMPFS_MB}}


class Rlimits(Backend):
    """A plain child process: resource limits, a fresh working directory, an empty
    environment and the seccomp filter; the host's files and processes stay visible."""

    name = "rlimits"
    guarantees = "resource limits only"
    namespaces = False
    host_dir = True

    def argv(self, run_id: str = "", seccomp_fd: int | None = None) -> list[str]:
        return python_argv(run_id)

    def payload(self, host_dir: str | None, filter_loaded: bool = False) -> dict:
        return {"die_with_parent": True}

    def environment(self, host_dir: str | None) -> dict[str, str]:
        return env(host_dir or "/", host_dir or "/tmp")


BACKENDS: list[Backend] = [Bwrap(), Unshare(), Rlimits()]  # strongest first


def names() -> tuple[str, ...]:
    return tuple(b.name for b in BACKENDS)


def get(name: str) -> Backend:
    """The backend called ``name`` (a ValueError listing the names otherwise)."""
    for b in BACKENDS:
        if b.name == name:
            return b
    raise ValueError(f"no sandbox backend {name!r}; the backends are {', '.join(names())}.")


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


__all__ = ["Backend", "Bwrap", "Unshare", "Rlimits", "BACKENDS", "names", "get", "BOOTSTRAP", "harness_source",
           "harness_code", "bwrap_filter", "interpreter", "python_argv", "visible_paths"]
