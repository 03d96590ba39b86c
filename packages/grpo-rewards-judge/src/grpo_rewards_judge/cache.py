"""The judge's answers on disk, so that a re-scored run or a resumed one pays for nothing twice.

The key is a SHA-256 of the judge's address and the whole request: the model, its sampling
settings (temperature, seed, max_tokens, log-probabilities), the system message and the
template filled with the prompt, the completion, the reference and the reward's own
settings (rubric, question, item). A change to any of them asks the judge again. What is
kept is the judge's answer (at most :data:`parse.MAX_ANSWER` characters), the probability
read from its log-probabilities, and the tokens it cost, so a parser that improves reads
old answers anew. Only answers the judge gave are kept: a time-out or a 5xx is asked again
next time. The API key is not part of the request body and is never stored.

One SQLite file (``answers.sqlite``) per cache folder, safe for the threads of a process
and for several processes (one per GPU) writing at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path

FILE = "answers.sqlite"
OFF = ("off", "none", "false", "no")


def folder(setting: str) -> Path | None:
    """The cache folder a ``cache`` setting names: ``"default"`` is ``$GRPO_JUDGE_CACHE``, else
    ``$XDG_CACHE_HOME/grpo/judge``, else ``~/.cache/grpo/judge``; ``"off"`` is None."""
    if setting.strip().lower() in OFF:
        return None
    if setting == "default":
        env = os.environ.get("GRPO_JUDGE_CACHE")
        if env:
            return Path(env).expanduser()
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "grpo" / "judge"
    return Path(setting).expanduser()


def key(url: str, body: dict) -> str:
    text = json.dumps([url, body], sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


class Cache:
    """``get(keys)`` -> {key: (answer, p, tokens)}; ``put(rows)``."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # a forked process opens its own
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path / FILE, timeout=60, check_same_thread=False,
                                       isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT, p REAL, "
                             "tokens INTEGER)")
            except (OSError, sqlite3.Error) as exc:
                raise OSError(f"the judge's cache at {self.path} cannot be used ({exc}); set cache= to a "
                              f"folder you can write, or cache='off'") from None
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, keys: list[str]) -> dict[str, tuple[str, float | None, int]]:
        out: dict[str, tuple[str, float | None, int]] = {}
        with self._lock:
            conn = self._connection()
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for k, answer, p, tokens in conn.execute(
                        f"SELECT key, answer, p, tokens FROM answers WHERE key IN ({marks})", chunk):
                    out[k] = (answer, p, int(tokens or 0))
        return out

    def put(self, rows: list[tuple[str, str, float | None, int]]) -> None:
        if not rows:
            return
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", rows)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")


_open: dict[Path, Cache] = {}
_open_lock = threading.Lock()


def cache_at(path: Path | None) -> Cache | None:
    """The process's one :class:`Cache` for ``path`` (None: no cache)."""
    if path is None:
        return None
    path = path.resolve()
    with _open_lock:
        if path not in _open:
            _open[path] = Cache(path)
        return _open[path]


__all__ = ["Cache", "cache_at", "folder", "key", "OFF"]
