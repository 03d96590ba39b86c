"""``remote.server(url=..., reward=...)``: score through a running ``grpo serve``, so that
``grpo train``, ``grpo score`` and ``grpo check`` can share one server.

The batch goes to ``POST {url}/score`` with every dataset column the trainer passes; the
answer's ``reward`` scores (or the weighted ``total`` when no reward is named) come back,
None where the server scored None. A server that is down, answers an error or takes
longer than ``timeout`` raises, and the training guard (``rewards/policy.py``) counts it
as for any reward; the reward's time limit (``time_limit:`` in its entry, else
``health.reward_time_limit``) bounds the whole call. Standard library only (urllib)."""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from urllib.parse import urlparse

TOKEN_ENV = "GRPO_SERVE_TOKEN"
MAX_ANSWER = 64 * 1024 * 1024  # bytes read from the server's answer at most
SKIP = frozenset({"prompts", "completions", "completion_ids", "trainer_state", "log_metric", "log_extra"})


def _check(url: str, timeout: float) -> str:
    parsed = urlparse(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"remote.server needs url= a grpo serve address such as 'http://127.0.0.1:8005', got {url!r}")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"remote.server timeout must be a positive number of seconds, got {timeout!r}")
    return url.rstrip("/")


def _columns(kwargs: dict, n: int) -> dict:
    """The dataset columns TRL passes, one value per completion."""
    return {k: v for k, v in kwargs.items() if k not in SKIP and isinstance(v, (list, tuple)) and len(v) == n}


def _post(url: str, body: bytes, timeout: float, token: str | None) -> dict:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - http(s) checked
            raw = answer.read(MAX_ANSWER + 1)
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode("utf-8", "replace")
        raise RuntimeError(f"the reward server at {url} answered {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConnectionError(f"the reward server at {url} cannot be reached ({reason}); is grpo serve running?") from None
    if len(raw) > MAX_ANSWER:
        raise RuntimeError(f"the reward server at {url} answered more than {MAX_ANSWER} bytes")
    return json.loads(raw.decode("utf-8"))


def _values(answer: dict, reward: str | None, n: int, url: str) -> list[float | None]:
    if reward is None:
        values = answer.get("total")
    else:
        scores = answer.get("scores") or {}
        if reward not in scores:
            raise ValueError(f"the reward server at {url} serves {', '.join(scores) or 'no rewards'}, not '{reward}'")
        values = scores[reward]
    if not isinstance(values, list) or len(values) != n:
        raise RuntimeError(f"the reward server at {url} answered {values!r:.80} for {n} completions")
    return [None if v is None else float(v) if math.isfinite(float(v)) else None for v in values]


def server(completions, prompts=None, url: str = "", reward: str | None = None, timeout: float = 60.0,
           token_env: str = TOKEN_ENV, **kwargs) -> list[float | None]:
    """Scores from a running ``grpo serve`` at ``url``: its reward ``reward`` (a logged
    name, e.g. ``math.correctness``), or the weighted total of all it serves; the token,
    if the server needs one, from the environment variable ``token_env``."""
    base = _check(url, timeout)
    if not completions:
        return []
    n = len(completions)
    payload = {"completions": list(completions), "columns": _columns(kwargs, n)}
    if prompts is not None and any(p is not None for p in prompts):
        payload["prompts"] = list(prompts)
    body = json.dumps(payload, default=str).encode("utf-8")
    answer = _post(f"{base}/score", body, timeout, os.environ.get(token_env))
    return _values(answer, reward, n, base)


__all__ = ["server", "TOKEN_ENV"]
