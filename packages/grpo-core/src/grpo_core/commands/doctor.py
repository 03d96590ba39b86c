"""`grpo doctor`: what an issue report needs in one command: the versions (Python, torch
and its CUDA, TRL, transformers, peft, accelerate, each plugin with its API), the device,
grpo's known-issue checks with their verdicts, and whether this TRL and transformers are
the versions grpo is tested with. ``--json`` prints the same for an issue.

Exit code: 0 when no check fails (a ``warn`` is said, not failed), 1 when one does.
Everything here is read where it is needed: ``--help`` imports neither torch nor TRL."""

from __future__ import annotations

import os
import platform
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from grpo_core.base.version import __version__
from grpo_core.commands import SUMMARIES, print_json, table
from grpo_core.plugin import api, plugins, registry
from grpo_core.rewards.reward import get_reward
from grpo_core.run.prepare import cpu_bf16
from grpo_core.run.versions import TESTED, requirement, version_problem

DISTRIBUTIONS = ("torch", "trl", "transformers", "peft", "accelerate", "datasets", "pluggy", "vllm")
CUDNN_NAN_FROM = (2, 11)  # pytorch#196678: cuDNN's sdpa backward NaN from torch 2.11 on (docs/gpu.md)
REWARD_SECONDS = 120.0  # a reward check still running then fails


@dataclass(frozen=True)
class Check:
    name: str
    verdict: str  # ok | warn | fail | skip
    detail: str


def add_parser(sub) -> None:
    p = sub.add_parser(
        "doctor", help=SUMMARIES["doctor"],
        description="Versions, device, grpo's known-issue checks and the tested TRL range, for an issue "
        "report. Exit 0: no check failed; 1: one did.")
    p.add_argument("--json", action="store_true", help="print the report as JSON (paste it into an issue)")
    p.add_argument("--no-rewards", action="store_true",
                   help="skip the checks that score with installed rewards (the math checker pool, the code "
                   "sandbox)")
    p.set_defaults(func=run)


def run(args) -> int:
    report = gather(rewards=not args.no_rewards)
    if args.json:
        print_json(report)
    else:
        print(render(report))
    return 0 if report["ok"] else 1


def version_of(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def torch_facts() -> dict:
    """torch's build and the devices it sees (the one place doctor imports torch)."""
    import torch

    cuda = torch.cuda.is_available()
    devices = []
    for i in range(torch.cuda.device_count() if cuda else 0):
        props = torch.cuda.get_device_properties(i)
        devices.append({"name": props.name, "capability": f"{props.major}.{props.minor}",
                        "memory_gib": round(props.total_memory / 2**30, 1)})
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    mps = getattr(torch.backends, "mps", None)
    return {"version": torch.__version__, "cuda": torch.version.cuda, "cudnn": cudnn, "devices": devices,
            "bf16": bool(cuda and torch.cuda.is_bf16_supported()), "mps": bool(mps and mps.is_available()),
            "cpu_bf16": cpu_bf16(), "threads": torch.get_num_threads(),
            "nvidia_driver": Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists()}


def gather(rewards: bool = True) -> dict:
    """The report: versions, torch, plugins, the checks and ``ok`` (no check failed)."""
    versions = {"grpo-core": __version__, **{d: version_of(d) for d in DISTRIBUTIONS}}
    torch = torch_facts()
    versions["torch"] = torch["version"]  # the one imported (a local build's own string)
    with warnings.catch_warnings():  # plugin problems become a check below, not stray warnings
        warnings.simplefilter("ignore")
        loaded = plugins.loaded_plugins()
    checks = [*range_checks(versions), cuda_build_check(torch), cudnn_check(torch), bf16_check(torch),
              plugins_check(loaded, [str(p) for p in plugins.problems])]
    if rewards:
        checks += [math_pool_check(), sandbox_check()]
    return {"python": sys.version.split()[0], "platform": platform.platform(), "plugin_api": api.PLUGIN_API,
            "versions": versions, "torch": torch, "device": device_line(torch),
            "plugins": [{k: p.get(k) for k in ("name", "distribution", "version", "api", "hooks", "refused")}
                        for p in loaded],
            "checks": [asdict(c) for c in checks], "ok": all(c.verdict != "fail" for c in checks)}


def device_line(torch: dict) -> str:
    if torch["devices"]:
        gpus = ", ".join(f"{d['name']} (compute {d['capability']}, {d['memory_gib']} GiB)" for d in torch["devices"])
        return f"cuda: {len(torch['devices'])} GPU(s): {gpus}; CUDA {torch['cuda']}, cuDNN {torch['cudnn']}"
    if torch["mps"]:
        return "mps (Apple GPU)"
    return f"cpu: {os.cpu_count()} cores, torch uses {torch['threads']} threads"


def range_checks(versions: dict) -> list[Check]:
    """TRL and transformers against the versions grpo is tested with (what ``grpo train`` checks)."""
    out = []
    for dist in TESTED:
        found, wanted = versions.get(dist), requirement(dist)
        name = f"{dist} in the tested range"
        problem = version_problem(dist, found) if found is not None else None
        if found is None:
            out.append(Check(name, "fail", f"{dist} is not installed: pip install '{wanted}'"))
        elif problem is None:
            out.append(Check(name, "ok", f"{dist} {found}; tested: {wanted} (docs/trl-versions.md)"))
        else:
            out.append(Check(name, "fail", problem.rstrip(".") + " (grpo train refuses it)"))
    return out


def cuda_build_check(torch: dict) -> Check:
    name = "torch build"
    if torch["cuda"] is None and torch["nvidia_driver"]:
        return Check(name, "warn", f"torch {torch['version']} is a CPU build, but this machine has an NVIDIA "
                                   f"driver: training runs on the CPU. Install a CUDA build of torch "
                                   f"(pytorch.org's selector) to use the GPU")
    if torch["cuda"] is not None and not torch["devices"]:
        return Check(name, "warn", f"torch {torch['version']} is built for CUDA {torch['cuda']} but sees no "
                                   f"GPU (driver, CUDA_VISIBLE_DEVICES): training runs on the CPU")
    return Check(name, "ok", f"torch {torch['version']}" + (f", CUDA {torch['cuda']}" if torch["cuda"] else
                                                            " (CPU build)"))


def _torch_minor(version: str) -> tuple[int, int]:
    parts = version.split("+")[0].split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def cudnn_check(torch: dict) -> Check:
    name = "cuDNN attention NaN (pytorch#196678)"
    if not torch["devices"]:
        return Check(name, "skip", "no CUDA device")
    if _torch_minor(torch["version"]) < CUDNN_NAN_FROM:
        return Check(name, "ok", f"torch {torch['version']} predates the bug (torch 2.11 on)")
    return Check(name, "ok", f"torch {torch['version']} has it: grpo train turns cuDNN's attention kernel off "
                             f"while training (model.cudnn_attention: false, the default); leave it off "
                             f"(docs/gpu.md)")


def bf16_check(torch: dict) -> Check:
    name = "bf16"
    if torch["devices"]:
        if torch["bf16"]:
            return Check(name, "ok", "the GPU computes in bf16: bf16: true trains in it")
        return Check(name, "warn", "this GPU has no bf16 (compute < 8.0): set bf16: false (fp16: true or float32); "
                                   "a config with bf16: true fails at start")
    if torch["cpu_bf16"]:
        return Check(name, "ok", "this CPU multiplies in bf16 (AVX-512 BF16 / AMX): sampling.precision auto "
                                 "samples in bf16")
    return Check(name, "ok", "this CPU has no bf16 instructions: grpo trains and samples in float32 here "
                             "(sampling.precision auto)")


def plugins_check(loaded: list[dict], problems: list[str]) -> Check:
    name = "plugins"
    if problems:
        return Check(name, "fail", f"{len(problems)} problem(s): " + " | ".join(problems))
    apis = sorted({p["api"] or "undeclared" for p in loaded if p["distribution"] != "grpo-core"})
    ours = [p for p in loaded if p["distribution"] != "grpo-core"]
    return Check(name, "ok", f"{len(ours)} loaded, none refused; their APIs: {', '.join(apis) or '-'} "
                             f"(this grpo-core provides {api.PLUGIN_API})")


def _timed(name: str, score: Callable[[], tuple[bool, str] | None]) -> Check:
    """``score()`` in a thread with a time limit: ``(right, detail)`` (None: its plugin is not
    loaded, skipped); a warning it raised makes an ``ok`` a ``warn``."""
    done: dict = {}

    def target():
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                done["detail"] = score()
            done["warnings"] = [str(w.message) for w in caught]
        except Exception as exc:  # noqa: BLE001 - the verdict is the report
            done["error"] = f"{type(exc).__name__}: {exc}"

    start = time.monotonic()
    thread = threading.Thread(target=target, daemon=True, name=f"grpo-doctor-{name}")
    thread.start()
    thread.join(REWARD_SECONDS)
    seconds = time.monotonic() - start
    if thread.is_alive():
        return Check(name, "fail", f"no result after {REWARD_SECONDS:g} s: it hangs on this machine")
    if "error" in done:
        return Check(name, "fail", done["error"])
    if done["detail"] is None:
        return Check(name, "skip", "its plugin is not loaded")
    right, detail = done["detail"]
    verdict = "fail" if not right else "warn" if done["warnings"] else "ok"
    extra = "; " + " | ".join(done["warnings"]) if done["warnings"] else ""
    return Check(name, verdict, f"{detail} in {seconds:.1f} s{extra}")


def _registered(name: str):
    return registry.rewards().entries.get(name)


def math_pool_check() -> Check:
    """math.correctness through its worker pool: a right and a wrong boxed answer."""
    def score() -> tuple[bool, str] | None:
        if _registered("math.correctness") is None:
            return None
        got = get_reward("math.correctness")(["The answer is \\boxed{4}.", "The answer is \\boxed{5}."],
                                             answer=["4", "4"])
        return got == [1.0, 0.0], f"math.correctness scored a right and a wrong answer {got} (expected [1.0, 0.0])"
    return _timed("math checker pool", score)


def sandbox_check() -> Check:
    """code.tests runs a two-line program and its test in the code sandbox."""
    def score() -> tuple[bool, str] | None:
        if _registered("code.tests") is None:
            return None
        got = get_reward("code.tests")(["```python\nx = 6 * 7\n```", "```python\nx = 41\n```"],
                                       tests=[["assert x == 42"], ["assert x == 42"]])
        return got == [1.0, 0.0], (f"code.tests scored a passing and a failing program in the sandbox"
                                   f"{_sandbox_backend()} {got} (expected [1.0, 0.0])")
    return _timed("code sandbox", score)


def _sandbox_backend() -> str:
    """The sandbox grpo-rewards-code chose, when it says (its module is loaded by then)."""
    sandbox = sys.modules.get("grpo_rewards_code.sandbox")
    try:
        return f" ({sandbox.backend().name})" if sandbox is not None else ""
    except Exception:  # noqa: BLE001 - only a detail of the line
        return ""


MARKS = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "skip"}


def render(report: dict) -> str:
    versions = report["versions"]
    torch = report["torch"]
    rows = [["python", report["python"]], ["platform", report["platform"]],
            ["grpo-core", f"{versions['grpo-core']} (plugin API {report['plugin_api']})"]]
    for dist in DISTRIBUTIONS:
        shown = versions[dist] or "not installed"
        if dist == "torch" and versions[dist]:
            shown += f" (CUDA {torch['cuda']}, cuDNN {torch['cudnn']})" if torch["cuda"] else " (CPU build)"
        if versions[dist] or dist != "vllm":
            rows.append([dist, shown])
    plugins = [[p["name"], f"{p['distribution'] or '-'} {p['version'] or ''}".strip(), p["api"] or "undeclared",
                ("REFUSED: " + p["refused"]) if p.get("refused") else ", ".join(p["hooks"])]
               for p in report["plugins"]]
    checks = [[MARKS[c["verdict"]], c["name"], c["detail"]] for c in report["checks"]]
    failed = [c["name"] for c in report["checks"] if c["verdict"] == "fail"]
    verdict = (f"{len(failed)} check(s) failed: {', '.join(failed)}." if failed
               else "No check failed.")
    return "\n\n".join([table(rows, ["version", ""]), table(plugins, ["plugin", "distribution", "api", "hooks"]),
                        f"device: {report['device']}", table(checks, ["", "check", "verdict"]),
                        verdict + " `grpo doctor --json` prints this for an issue report."])
