"""One reward call's questions to the judge: from the cache where it holds them, the rest over
the network (each distinct question once), the first few asked twice to see whether the judge
answers the same at temperature 0, and what it cost, in a :class:`Ledger` the reward logs.

What a reward logs per call (``log_metric``; TRL averages them over a step's calls and writes
them to metrics.jsonl; ``<name>`` is the registered name, e.g. ``judge.yesno``):

- ``<name>/tokens``: prompt + completion tokens the server reported for the requests made
  (0 for answers from the cache); ``<name>/requests``: HTTP requests made, retries included;
- ``<name>/cached``: the share of questions answered from the cache;
- ``<name>/unparsed``: completions scored None because the judge's answer could not be read;
- ``<name>/failed``: completions scored None because the judge gave no answer (after retries);
- ``<name>/flaky``: questions asked twice whose answers differed (with the reward's warning).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from . import cache as answers
from . import client as clients
from .client import JudgeUnavailable, Reply, client
from .settings import Settings

_warned: set[tuple] = set()
_recheck_left: dict[tuple, int] = {}
_lock = threading.Lock()


class _NoAnswer:
    """A question the judge gave no answer to (after its retries)."""

    def __repr__(self) -> str:
        return "NO_ANSWER"


NO_ANSWER = _NoAnswer()


@dataclass
class Ledger:
    questions: int = 0
    cached: int = 0
    requests: int = 0
    tokens: int = 0
    unparsed: int = 0  # completions scored None: an answer that could not be read
    failed: int = 0  # completions scored None: no answer
    rechecked: int = 0
    flaky: list = field(default_factory=list)  # (first answer, second answer, spread)
    first_unparsed: str | None = None
    first_error: str | None = None


def warn(key: tuple, message: str) -> None:
    """``warning: message`` on stderr, once per process for ``key``."""
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    print(f"warning: {message}", file=sys.stderr, flush=True)


def ask(s: Settings, users: list[str], read: Callable[[Reply], float | None], soft: tuple[str, str] | None,
        ledger: Ledger) -> list:
    """Per filled template in ``users``: the value ``read`` makes of the judge's answer
    (a float, or None when it cannot be read), or :data:`NO_ANSWER`."""
    if not users:
        return []
    if s.in_clear() and os.environ.get(s.api_key_env):
        warn((s.url, "in clear"), f"the judge at {s.url} is plain http to another machine: the API key in "
             f"${s.api_key_env} travels unencrypted. Use https://, or a tunnel.")
    bodies = [s.body(u, logprobs=soft is not None) for u in users]
    keys = [answers.key(s.url, b) for b in bodies]
    store = answers.cache_at(answers.folder(s.cache))
    replies: dict[str, Reply] = {}
    if store is not None:
        replies = {k: Reply(answer=a, p=p, cached=True) for k, (a, p, _) in store.get(sorted(set(keys))).items()}
    new = list(dict.fromkeys(k for k in keys if k not in replies))  # each distinct question once
    body_of = dict(zip(keys, bodies))
    twice = new[:_recheck_budget(s, len(new))]
    got = client(s.endpoint, s.concurrency).ask([body_of[k] for k in new + twice], soft)
    fresh, again = dict(zip(new, got[:len(new)])), dict(zip(twice, got[len(new):]))
    for reply in got:
        ledger.requests += reply.requests
        ledger.tokens += reply.tokens
    if store is not None:
        store.put([(k, r.answer, r.p, r.tokens) for k, r in fresh.items() if r.answer is not None])
    replies.update(fresh)
    _compare(fresh, again, read, ledger)
    ledger.questions += len(keys)
    ledger.cached += sum(replies[k].cached for k in keys)
    out: list[float | None | _NoAnswer] = []
    for k in keys:
        reply = replies[k]
        if reply.answer is None:
            ledger.first_error = ledger.first_error or reply.error
            out.append(NO_ANSWER)
            continue
        value = read(reply)
        if value is None:
            ledger.first_unparsed = ledger.first_unparsed if ledger.first_unparsed is not None else reply.answer
        out.append(value)
    if all(v is NO_ANSWER for v in out):
        reason = f"the judge ({s.judge}) answered none of {len(out)} questions: {ledger.first_error}"
        if not all(replies[k].item_only for k in keys):  # not only questions it refused (a 400): it is down
            client(s.endpoint, s.concurrency).mark_down(reason)
        raise JudgeUnavailable(reason)
    return out


def _recheck_budget(s: Settings, new: int) -> int:
    """How many of ``new`` questions to ask twice: the first ``recheck`` of the process for
    this judge, at temperature 0 only (above it answers are meant to vary)."""
    if s.temperature != 0 or s.recheck <= 0 or not new:
        return 0
    with _lock:
        k = (s.url, s.model)
        left = _recheck_left.setdefault(k, s.recheck)
        take = min(left, new)
        _recheck_left[k] = left - take
    return take


def _compare(fresh: dict[str, Reply], again: dict[str, Reply], read, ledger: Ledger) -> None:
    for k, second in again.items():
        first = fresh[k]
        if first.answer is None or second.answer is None:
            continue
        a, b = read(first), read(second)
        ledger.rechecked += 1
        if (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-6):
            spread = abs(a - b) if a is not None and b is not None else math.nan
            ledger.flaky.append((first.answer[:40], second.answer[:40], spread))


def report(name: str, s: Settings, ledger: Ledger, kwargs: dict, completions: int) -> None:
    """The call's metrics through ``log_metric``, and a warning (once per kind) for what
    cost completions their score or shows a judge that does not repeat itself."""
    log_metric = kwargs.get("log_metric")
    if callable(log_metric):
        log_metric(f"{name}/tokens", float(ledger.tokens))
        log_metric(f"{name}/requests", float(ledger.requests))
        log_metric(f"{name}/cached", ledger.cached / ledger.questions if ledger.questions else 0.0)
        log_metric(f"{name}/unparsed", float(ledger.unparsed))
        log_metric(f"{name}/failed", float(ledger.failed))
        if ledger.rechecked:
            log_metric(f"{name}/flaky", float(len(ledger.flaky)))
    if ledger.unparsed:
        warn((name, s.url, "unparsed"), f"{name}: the judge's answer could not be read for {ledger.unparsed} of "
             f"{completions} completions (e.g. {ledger.first_unparsed!r:.80}); they score None, counted in "
             f"{name}/unparsed. A model that does not answer in the format asked needs a template of its own, "
             f"more max_tokens (a reasoning model), or a stronger judge: grpo judge calibrate shows which.")
    if ledger.failed:
        warn((name, s.url, "failed"), f"{name}: the judge ({s.judge}) gave no answer for {ledger.failed} of "
             f"{completions} completions ({ledger.first_error}); they score None, counted in {name}/failed.")
    if ledger.flaky:
        spreads = [x for *_, x in ledger.flaky if not math.isnan(x)]
        first = ledger.flaky[0]
        warn((name, s.url, "flaky"), f"{name}: the judge ({s.judge}) answered the same request differently on "
             f"{len(ledger.flaky)} of {ledger.rechecked} questions asked twice at temperature 0 (spread up to "
             f"{max(spreads) if spreads else math.nan:.2f}; e.g. {first[0]!r} then {first[1]!r}): its scores "
             f"are noisy. Check that the server honours temperature 0 and the seed (vLLM: batch-invariant "
             f"kernels), or use a judge that does.")


def reset() -> None:
    """Forget the warnings given, the rechecks made and the judges found down (tests, a new run
    in the same process)."""
    with _lock:
        _warned.clear()
        _recheck_left.clear()
    clients.reset()


__all__ = ["NO_ANSWER", "Ledger", "ask", "report", "reset", "warn"]
