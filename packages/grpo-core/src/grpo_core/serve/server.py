"""Running the reward server on uvicorn: loopback unless told otherwise, and never
elsewhere without a token; Ctrl-C or SIGTERM stop accepting and finish the requests
in flight (uvicorn's graceful shutdown)."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time

from grpo_core.base.errors import GrpoError

TOKEN_ENV = "GRPO_SERVE_TOKEN"
LOOPBACK = "127.0.0.1"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """A server reachable from other machines must ask for a token."""
    if not is_loopback(host) and not token:
        raise GrpoError(f"refusing to bind {host} without a token: anyone who can reach it could use it. "
                        f"Set --token or ${TOKEN_ENV} (clients send 'Authorization: Bearer <token>'), "
                        f"or bind {LOOPBACK}.")


def token_from(flag: str | None) -> str | None:
    return flag or os.environ.get(TOKEN_ENV) or None


def _config(app, host: str, port: int, graceful: int):
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                          timeout_graceful_shutdown=graceful, lifespan="off")


def serve(app, host: str, port: int, token: str | None, graceful: int = 60) -> None:
    """Blocks until Ctrl-C or SIGTERM; the requests in flight are finished first."""
    import uvicorn

    check_bind(host, token)
    uvicorn.Server(_config(app, host, port, graceful)).run()


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Background:
    """The server in a thread of this process (tests, the bench): ``with Background(app) as url``."""

    def __init__(self, app, host: str = LOOPBACK, port: int | None = None, token: str | None = None):
        import uvicorn

        check_bind(host, token)
        self.port = port or free_port(host)
        self.url = f"http://{host}:{self.port}"
        self.server = uvicorn.Server(_config(app, host, self.port, 3))  # (off the main thread: no signal handlers)
        self.thread = threading.Thread(target=self.server.run, name="grpo-serve", daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the reward server did not start")
            time.sleep(0.02)
        return self.url

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
