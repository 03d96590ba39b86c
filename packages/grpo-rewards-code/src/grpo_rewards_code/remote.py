"""The remote backend: jobs sent to a sandbox service that speaks SandboxFusion's
``POST /run_code`` API (https://bytedance.github.io/SandboxFusion/docs/api/run-code-run-code-post).

Request: ``{"code", "language": "python", "run_timeout", "compile_timeout",
"memory_limit_MB", "stdin", "files", "fetch_files"}``. Response: ``{"status":
Success|Failed|SandboxError, "message", "run_result": {"status":
Finished|Error|TimeLimitExceeded, "return_code", "stdout", "stderr",
"execution_time"}}``.

A job with tests travels as one program: the harness with the job embedded. It
reports its verdicts on stdout behind a random token (the code's own output goes
to /dev/null), so the service needs nothing but a Python interpreter, and the
result is read exactly as the local sandbox's. A whole program (``mode="raw"``:
stdin/stdout cases, the ``python`` tool) travels as it is, with its ``stdin``:
the service's stdout, stderr and return code are its own, and the service's
limits are the only ones it runs under. Network failures, HTTP errors
and ``SandboxError`` replies are sandbox errors (the rewards score those items
None and count them), never a 0.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from .backends import harness_source
from .jobs import Job, Limits, Result, prepared_tests, read_verdicts

MAX_REPLY = 16 << 20  # bytes of a reply read
KEEP = 64 << 10  # stdout / stderr bytes kept of a whole program's run (as the local runner)
HTTP_MARGIN = 30.0  # seconds on top of the run's limit for the request itself


def program(job: Job, limits: Limits, token: str) -> str:
    """The self-contained program for one job: harness + the job as a literal."""
    payload = {"token": token, "mode": job.mode, "code": job.code, "tests": prepared_tests(job),
               "setup": job.setup, "stdin": job.stdin,
               "limits": limits.for_harness(), "seccomp": limits.seccomp, "channel": -1,
               "best_effort": True}
    return harness_source() + "\n_main(" + repr(payload) + ")\n"


def request_body(job: Job, limits: Limits, token: str) -> dict:
    raw = job.mode == "raw"
    return {"code": job.code if raw else program(job, limits, token), "language": "python",
            "run_timeout": limits.timeout, "compile_timeout": 10, "memory_limit_MB": limits.memory_mb,
            "stdin": job.stdin if raw else "", "files": {}, "fetch_files": []}


def _post(url: str, body: dict, timeout: float) -> dict:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as reply:
        raw = reply.read(MAX_REPLY + 1)
    if len(raw) > MAX_REPLY:
        raise ValueError(f"reply larger than {MAX_REPLY >> 20} MiB")
    answer = json.loads(raw)
    if not isinstance(answer, dict):
        raise ValueError(f"reply is {type(answer).__name__}, not a JSON object")
    return answer


def run_one(job: Job, endpoint: str, limits: Limits) -> Result:
    url = endpoint.rstrip("/") + "/run_code"
    token = secrets.token_hex(16)
    start = time.monotonic()
    res = Result(status="ok", tests=[None] * len(job.tests))
    try:
        answer = _post(url, request_body(job, limits, token), limits.timeout + HTTP_MARGIN)
    except urllib.error.HTTPError as exc:
        res.status, res.detail = "sandbox_error", f"{url}: HTTP {exc.code} {exc.reason}"
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused connections, bad JSON
        res.status, res.detail = "sandbox_error", f"{url}: {type(exc).__name__}: {exc}"
    else:
        (_read_raw if job.mode == "raw" else _read_answer)(answer, res, token, limits)
    res.seconds = time.monotonic() - start
    return res


def _read_answer(answer: dict, res: Result, token: str, limits: Limits) -> None:
    run = answer.get("run_result") or {}
    if answer.get("status") == "SandboxError" or not isinstance(run, dict):
        res.status = "sandbox_error"
        res.detail = f"the service says SandboxError: {str(answer.get('message', ''))[:300]}"
        return
    stdout = str(run.get("stdout") or "")
    res.stderr = str(run.get("stderr") or "").encode()[-4096:]
    res.returncode = run.get("return_code") if isinstance(run.get("return_code"), int) else None
    seen = read_verdicts(res, token, stdout.encode("utf-8", "replace"))
    if run.get("status") == "TimeLimitExceeded":
        res.status, res.detail = "timeout", f"the service stopped it at its {limits.timeout:g} s limit"
    elif "ready" not in seen:
        res.status = "sandbox_error"
        res.detail = (f"the harness did not start on the service (status {run.get('status')}, exit "
                      f"{res.returncode}): {res.stderr[-300:].decode('utf-8', 'replace')}")
    elif "done" not in seen and "exit" not in seen:
        res.status, res.detail = "crashed", f"ended early with exit status {res.returncode}"


def _read_raw(answer: dict, res: Result, token: str, limits: Limits) -> None:
    """A whole program's reply: its own stdout, stderr and return code."""
    run = answer.get("run_result") or {}
    if answer.get("status") == "SandboxError" or not isinstance(run, dict) or not run:
        res.status = "sandbox_error"
        res.detail = f"the service says {answer.get('status')}: {str(answer.get('message', ''))[:300]}"
        return
    res.stdout = str(run.get("stdout") or "").encode()[:KEEP]
    res.stderr = str(run.get("stderr") or "").encode()[-KEEP:]
    code = run.get("return_code")
    res.returncode = res.exit_code = code if isinstance(code, int) else None
    if run.get("status") == "TimeLimitExceeded":
        res.status, res.detail = "timeout", f"the service stopped it at its {limits.timeout:g} s limit"
    elif res.exit_code is None:
        res.status, res.detail = "crashed", f"the service reports no return code (status {run.get('status')})"


def run_jobs(jobs: list[Job], endpoint: str, limits: Limits, workers: int) -> list[Result]:
    """One request per job, ``workers`` at a time."""
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"endpoint={endpoint!r}: give the service's base URL, e.g. 'http://10.0.0.5:8080'.")
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        return list(pool.map(lambda job: run_one(job, endpoint, limits), jobs))


__all__ = ["run_jobs", "run_one", "program", "request_body"]
