"""A run directory as ``grpo view`` reads it, finished or still training: what it holds,
what is wrong with it (each problem a sentence for the page), its logged steps, its
health events and its rollout log, cached file by file so that a run still writing costs
only its new files. It reads; it never writes, moves or locks anything in the run.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grpo_core.base.errors import GrpoError
from grpo_core.runfiles import HEALTH, METRICS, PROGRESS, RESOLVED
from grpo_core.runfiles import rollouts as rollout_log
from grpo_core.runfiles.jsonl import read_lines
from grpo_core.runfiles.metrics import run_tokens, summary
from grpo_core.runfiles.progress import last_checkpoint, read_stages
from grpo_core.view import filters, settings

RECENT = 120.0  # seconds: a run that wrote this recently and has no final weights is still training


class _Cached:
    """A value computed from a file, recomputed when the file's size or time changes."""

    def __init__(self, path: Path, make):
        self.path, self.make = path, make
        self.key = None
        self.value = None
        self.lock = threading.Lock()

    def get(self):
        try:
            st = self.path.stat()
            key = (st.st_mtime_ns, st.st_size)
        except OSError:
            key = None
        with self.lock:
            if key != self.key or self.value is None:
                self.value, self.key = self.make(self.path), key
            return self.value


@dataclass
class StepFile:
    """One file of the log as read: its rows, and what filters found in them (kept: a
    filter asked again costs nothing for the files it has seen)."""

    step: int
    path: Path
    key: tuple | None = None
    rows: list[dict] | None = None
    error: str | None = None
    columns: tuple[str, ...] = ()  # the file's columns
    groups: list[tuple[tuple, list[int]]] = field(default_factory=list)  # (step, round, group) -> row positions
    memo: dict = field(default_factory=dict)  # (filter, its arguments) -> positions of the rows it picks

    def kept(self, key: tuple, make):
        """What ``make()`` found in this file's rows, found once (``key``: the filter and its arguments)."""
        if key not in self.memo:
            if len(self.memo) > 32:
                self.memo.clear()
            self.memo[key] = make()
        return self.memo[key]

    def suspects(self, correct: list[str]) -> set[int]:
        """Positions of the rows ``--suspect`` picks with these correctness rewards."""
        def find() -> set[int]:
            rows = self.rows or []
            flagged = {id(r) for r in filters.suspect(rows, correct)} if correct else set()
            return {i for i, r in enumerate(rows) if id(r) in flagged}

        return self.kept(("suspect", tuple(correct)), find)


class RolloutLog:
    """The run's rollout log, read file by file as it is needed and kept: a file is read
    again only when its size or time changes (a resumed run rewrites its steps). A file
    that cannot be read is named, and the others are served."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files: dict[Path, StepFile] = {}
        self.lock = threading.Lock()

    def steps(self) -> list[int]:
        """The logged steps, from the file names alone (no file is read)."""
        return sorted({step for step, _ in rollout_log.files(self.folder)})

    def _load(self, entry: StepFile) -> None:
        try:
            st = entry.path.stat()
        except OSError:
            entry.rows, entry.error = [], None  # removed since listed (a resumed run cutting back)
            return
        key = (st.st_mtime_ns, st.st_size)
        if key == entry.key:
            return
        entry.memo = {}
        try:
            columns = rollout_log.read_file(entry.path).to_pydict()  # (and zipped: 2.5 times faster than to_pylist)
            keys = list(columns)
            entry.columns = tuple(keys)
            entry.rows, entry.error = [dict(zip(keys, values)) for values in zip(*columns.values())], None
            grouped: dict[tuple, list[int]] = {}
            for i, r in enumerate(entry.rows):
                grouped.setdefault(filters.group_key(r), []).append(i)
            entry.groups = list(grouped.items())
        except GrpoError as exc:  # a newer format: said as it is
            entry.rows, entry.groups, entry.columns = [], [], ()
            entry.error = f"{exc} Its step is left out."
        except Exception as exc:  # noqa: BLE001 - any damage: named on the page, the other steps served
            entry.rows, entry.groups, entry.columns = [], [], ()
            entry.error = (f"{self.folder.name}/{entry.path.name} cannot be read ({type(exc).__name__}: "
                           f"{str(exc)[:200]}): the file is damaged or still being written; its step is left out.")
        entry.key = key

    def listing(self, steps: Iterable[int] | None = None) -> list[tuple[int, Path]]:
        """(step, file) of ``steps`` (all: None; a range is kept as one: asking for steps
        1-30000000 builds no set of 30 million), in the log's order; nothing read."""
        wanted = None if steps is None else steps if isinstance(steps, range) else set(steps)
        return [(s, p) for s, p in rollout_log.files(self.folder) if wanted is None or s in wanted]

    def entry(self, step: int, path: Path, read: bool = True) -> StepFile | None:
        """The file as read (again if it changed); ``read=False``: None when it was never read."""
        with self.lock:
            entry = self.files.get(path)
            if entry is None or entry.rows is None:
                if not read:
                    return None
                entry = self.files[path] = entry or StepFile(step, path)
            self._load(entry)
            return entry

    def entries(self, steps: Iterable[int] | None = None, between=None) -> tuple[list[StepFile], list[str]]:
        """The files of ``steps`` (all: None), read, in the log's order, and the problems met;
        ``between()`` is called after each file (the background reader gives way there)."""
        out: list[StepFile] = []
        problems: list[str] = []
        for step, path in self.listing(steps):
            entry = self.entry(step, path)
            assert entry is not None  # read=True: the entry, read
            if between is not None:
                between()
            out.append(entry)
            if entry.error:
                problems.append(entry.error)
        return out, problems

    def rows(self, steps: Iterable[int] | None = None) -> tuple[list[dict], list[str]]:
        """The rows of ``steps`` (all: None), in the log's order, and the problems met."""
        entries, problems = self.entries(steps)
        return [r for e in entries for r in e.rows or ()], problems


@dataclass
class State:
    """What the page says about a run before anything else, from what the run wrote:
    progress.json (a stage is ``done`` once its final weights are saved), the final weights,
    its checkpoints, and when its files were last written."""

    exists: bool
    finished: bool
    training: bool
    last_write: float | None  # seconds since the epoch
    problems: list[str]
    weights: bool = True  # the final weights are in the folder (a finished run copied without them: False)
    checkpoint: str | None = None  # the last checkpoint of an unfinished run

    def text(self, now: float | None = None) -> str:
        if not self.exists:
            return "missing"
        if self.finished:
            return "finished" if self.weights else "finished (its final weights are not in this folder)"
        if self.last_write is None:
            return "nothing written yet"
        ago = (now or time.time()) - self.last_write
        when = (f"{ago:.0f} s ago" if ago < 120 else f"{ago / 60:.0f} min ago" if ago < 7200 else
                f"{ago / 3600:.1f} h ago")
        if self.training:
            return f"still training (last written {when})"
        resume = (f"its last checkpoint is {self.checkpoint}: grpo train ... --resume continues it" if self.checkpoint
                  else "no checkpoint to resume from")
        return f"not finished: last written {when}, stopped ({resume})"


class Run:
    """One run directory served by ``grpo view`` (``index`` is its place on the command line;
    ``name``: its label, the shortest end of its path that tells it from the others)."""

    def __init__(self, path: Path, index: int, name: str | None = None):
        self.path = Path(path)
        self.index = index
        self.name = name or self.path.name or str(self.path)
        self.log = RolloutLog(self.path / rollout_log.FOLDER)
        self._metrics = _Cached(self.path / METRICS, read_lines)
        self._health = _Cached(self.path / HEALTH, read_lines)
        self._config = _Cached(self.path / RESOLVED, settings.read_config)
        self._correct: tuple[list[str], list[str]] | None = None
        self.warmed = threading.Event()  # set when warm() has read the whole log

    # -- what is there

    def state(self) -> State:
        p = self.path
        if not p.exists():
            return State(False, False, False, None, [
                f"{p} does not exist: give a run's output_dir (grpo train's output_dir). The view keeps serving "
                f"and shows the run once it appears."])
        if not p.is_dir():
            return State(False, False, False, None, [f"{p} is a file, not a run directory: give grpo train's "
                                                     f"output_dir."])
        problems = []
        stages, problem = read_stages(p / PROGRESS)
        if problem:
            problems.append(f"{p.name}/{problem}")
        names = settings.stage_names(self.config()) or list(stages)
        done = bool(names) and all(stages.get(n, {}).get("done") is True for n in names)
        # the final weights: adapter/ or model/ (one stage), the last stage's final/ (stages)
        weights = any((p / w).is_dir() for w in ("adapter", "model")) or bool(names and (p / names[-1] / "final").is_dir())
        finished = done or weights
        times = [t for t in (_mtime(p / METRICS), _mtime(self.log.folder), _mtime(p / PROGRESS)) if t]
        last = max(times) if times else None
        if not (p / METRICS).exists():
            what = ("no config.yaml, metrics.jsonl or rollouts/ either: is this grpo train's output_dir?"
                    if not (p / RESOLVED).is_file() and not self.log.folder.is_dir() else
                    "the run has logged no step yet (it may still be loading the model, or it stopped before "
                    "its first step)")
            problems.append(f"{p.name}/{METRICS} is missing: {what}")
        for lines in (self._metrics.get(), self._health.get()):
            if lines.problem:
                problems.append(f"{p.name}/{lines.problem}")
        if (p / METRICS).is_file() and not self.log.folder.is_dir():
            problems.append(f"{p.name}/{rollout_log.FOLDER}/ is missing: no rollout log (log.rollouts: none, or no "
                            f"step scored yet); curves only.")
        training = not finished and last is not None and time.time() - last < RECENT
        checkpoint = None
        if not finished:
            found = [c for c in [last_checkpoint(p)] + [last_checkpoint(p / n) for n in names if n != "main"] if c]
            checkpoint = str(found[-1].relative_to(p)) if found else None
        return State(True, finished, training, last, problems, weights or not done, checkpoint)

    def metrics(self) -> list[dict]:
        """The logged steps' records (those with a reward), in order."""
        return [r for r in self._metrics.get().records if "reward" in r and isinstance(r.get("step"), int)]

    def events(self) -> list[dict]:
        return self._health.get().records

    def tokens(self) -> str | None:
        """The run's sentence on what its generated tokens bought (``grpo rollouts`` says it too)."""
        return summary(*run_tokens(self._metrics.get().records))

    def config(self) -> settings.Config:
        """The run's config.yaml as read (again only when it changes)."""
        return self._config.get()

    # -- the rollout log

    def correctness(self, columns: list[str]) -> list[str]:
        """The run's correctness rewards (resolved once: it loads the plugins)."""
        if self._correct is None or self._correct[0] != columns:
            self._correct = (columns, filters.correctness_names(self.path, columns))
        return self._correct[1]

    def warm(self, between=None) -> None:
        """Read the whole log once, in the background, so that filters count all of it;
        ``between()``: called after each file (to give way to the pages being served)."""
        try:
            entries, _ = self.log.entries(between=between)
            first = next((e.rows[0] for e in entries if e.rows), None)
            correct = self.correctness(sorted(first)) if first else []
            for entry in entries:  # the default --suspect, found ahead too
                entry.suspects(correct)
                if between is not None:
                    between()
        except Exception:  # noqa: BLE001 - a page names what is wrong; warming only saves time
            pass
        finally:
            self.warmed.set()


def _mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def labels(paths: list[Path]) -> list[str]:
    """Each path's label: the fewest last parts of its absolute path that no other path ends
    with (``A/run``, ``B/run``; just ``run`` when it is the only one); the same path given
    twice is told by its place (``run #1``)."""
    parts = [Path(os.path.abspath(p)).parts for p in paths]
    out = []
    for i, mine in enumerate(parts):
        others = [q for q in parts if q != mine]
        k = 1
        while k < len(mine) and any(q[-k:] == mine[-k:] for q in others):
            k += 1
        label = str(Path(*mine[-k:])) if mine else str(paths[i])
        out.append(label if parts.count(mine) == 1 else f"{label} #{i}")
    return out


def runs_of(paths: list[Path]) -> list[Run]:
    if not paths:
        raise GrpoError("name one or more run directories: grpo view OUTPUT_DIR [OUTPUT_DIR ...]")
    return [Run(Path(p), i, name) for i, (p, name) in enumerate(zip(paths, labels(paths)))]


__all__ = ["Run", "RolloutLog", "State", "labels", "runs_of", "RECENT"]
