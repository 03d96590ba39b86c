"""A small sandbox service speaking SandboxFusion's ``POST /run_code`` API, backed
by the local sandbox: run it on a machine with spare CPUs and point the rewards
at it (``code.tests(sandbox='sandboxfusion', endpoint='http://HOST:8080')``).

    python -m grpo_rewards_code.server --host 0.0.0.0 --port 8080

Only ``language: python`` is served; each request's program runs as a whole
(``mode="raw"``) under ``run_timeout`` and ``memory_limit_MB``. There is no
authentication: bind it to a private network. The tests use it to check the
remote client end to end.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .jobs import Job, Limits, Result

MAX_REQUEST = 16 << 20
MAX_TIMEOUT = 300.0


def _limits(body: dict) -> Limits:
    timeout = body.get("run_timeout", 10)
    memory = body.get("memory_limit_MB", -1)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
        raise ValueError(f"run_timeout={timeout!r}: give seconds, at most {MAX_TIMEOUT:g}")
    if isinstance(memory, bool) or not isinstance(memory, int):
        raise ValueError(f"memory_limit_MB={memory!r}: give a whole number of MB (-1: the default)")
    return Limits(timeout=float(timeout), memory_mb=memory if memory > 0 else Limits.memory_mb)


def reply_for(result: Result) -> dict:
    """A sandbox Result in SandboxFusion's response shape."""
    if result.status == "sandbox_error":
        return {"status": "SandboxError", "message": result.detail, "compile_result": None,
                "run_result": None, "executor_pod_name": None, "files": {}}
    rc = result.exit_code if result.exit_code is not None else (result.returncode or 1)
    run_status = "TimeLimitExceeded" if result.status == "timeout" else "Finished"
    ok = result.status == "ok" and rc == 0
    return {"status": "Success" if ok else "Failed", "message": "" if ok else result.detail,
            "compile_result": None,
            "run_result": {"status": run_status, "execution_time": round(result.seconds, 4),
                           "return_code": rc, "stdout": result.stdout.decode("utf-8", "replace"),
                           "stderr": result.stderr.decode("utf-8", "replace")},
            "executor_pod_name": None, "files": {}}


class Handler(BaseHTTPRequestHandler):
    server_version = "grpo-code-sandbox/0.1"
    sandbox = "auto"
    slots = threading.BoundedSemaphore(4)

    def log_message(self, fmt, *args):  # quiet: one line per request is noise in training logs
        pass

    def _send(self, code: int, body: dict | str) -> None:
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if isinstance(body, dict) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/") in ("/v1/ping", "/ping"):
            return self._send(200, "pong")
        return self._send(404, {"detail": f"no such path {self.path!r}; POST /run_code"})

    def do_POST(self):
        if self.path.rstrip("/") != "/run_code":
            return self._send(404, {"detail": f"no such path {self.path!r}; POST /run_code"})
        try:
            size = int(self.headers.get("Content-Length", "0"))
            if not 0 < size <= MAX_REQUEST:
                raise ValueError(f"Content-Length {size}: send a JSON body of at most {MAX_REQUEST >> 20} MiB")
            body = json.loads(self.rfile.read(size))
            if not isinstance(body, dict) or not isinstance(body.get("code"), str):
                raise ValueError("the body must be a JSON object with 'code' (a string)")
            if body.get("language") != "python":
                raise ValueError(f"language {body.get('language')!r} is not served here; only 'python'")
            stdin = body.get("stdin") or ""
            if not isinstance(stdin, str):
                raise ValueError("'stdin' must be a string")
            limits = _limits(body)
        except (ValueError, UnicodeDecodeError) as exc:
            return self._send(400, {"detail": str(exc)})
        from . import sandbox

        with self.slots:
            result = sandbox.run([Job(body["code"], mode="raw", stdin=stdin)], limits, workers=1,
                                 sandbox=self.sandbox)[0]
        return self._send(200, reply_for(result))


def _local_choices() -> str:
    """``auto, bwrap, unshare or rlimits``: the local backends, in their order."""
    from .backends import names

    *first, last = ("auto", *names())
    return f"{', '.join(first)} or {last}"


def make_server(host: str = "127.0.0.1", port: int = 8080, sandbox: str = "auto",
                workers: int | None = None) -> ThreadingHTTPServer:
    """A server ready for ``serve_forever()`` (port 0: any free port, see ``server_address``)."""
    from .sandbox import backend, check_choice, resolve_workers

    if check_choice(sandbox) == "sandboxfusion":
        raise ValueError(f"the server runs jobs locally: choose {_local_choices()}")
    backend(sandbox)  # fail now, not on the first request, when it does not work here
    handler = type("BoundHandler", (Handler,), {"sandbox": sandbox,
                                                 "slots": threading.BoundedSemaphore(resolve_workers(workers))})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grpo_rewards_code.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--sandbox", default="auto", help=_local_choices())
    parser.add_argument("--workers", type=int, default=None, help="runs at a time (default: CPUs)")
    args = parser.parse_args(argv)
    server = make_server(args.host, args.port, args.sandbox, args.workers)
    host, port = server.server_address[:2]  # an IPv4 or IPv6 address: (host, port, ...)
    print(f"serving POST http://{host!s}:{port}/run_code", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
