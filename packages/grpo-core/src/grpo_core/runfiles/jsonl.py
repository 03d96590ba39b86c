"""``metrics.jsonl`` and ``health.jsonl``: one JSON object a line, appended as the run goes
(a line may be cut off while it is written). Read here; cut back here on ``--resume``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Lines:
    """A JSONL file's records, and the problem with it (a cut-off line) if any."""

    records: list[dict] = field(default_factory=list)
    problem: str | None = None


def read_lines(path: Path) -> Lines:
    """The records of ``path``; a line that is not JSON is named (the last one: a write in
    progress; another: damage), and the rest are kept. An absent file has no records."""
    out = Lines()
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return out
    except OSError as exc:  # a directory where the file should be, no permission
        what = "it is a directory, not a file" if path.is_dir() else f"{type(exc).__name__}: {exc.strerror or exc}"
        out.problem = (f"{path.name} cannot be read ({what}): grpo train writes it as a file of JSON lines; "
                       f"what it holds is not shown.")
        return out
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            last = n == len(lines) and not text.endswith("\n")
            out.problem = (f"{path.name}: line {n} is cut off{' (the run may be writing it)' if last else ''}; "
                           f"the {len(out.records)} records before it are shown." if last else
                           f"{path.name}: line {n} is not JSON (the file is damaged); it is left out.")
            continue
        if isinstance(record, dict):
            out.records.append(record)
    return out


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSONL file (``metrics.jsonl``); a line that is not one (a half-written
    last line) is skipped, and a file that is absent or cannot be read has none."""
    return read_lines(Path(path)).records


def jsonl_records(lines) -> list[dict]:
    """The JSON objects among ``lines`` (text or bytes); a line that is not one is skipped."""
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def truncate_jsonl(path: Path, max_step: int) -> None:
    """Keep the records up to ``max_step``: a resumed run writes the rest again."""
    if not path.is_file():
        return
    keep = []
    for line in path.read_text().splitlines():
        try:
            if json.loads(line).get("step", 0) <= max_step:
                keep.append(line)
        except json.JSONDecodeError:
            continue
    path.write_text("".join(line + "\n" for line in keep))


__all__ = ["Lines", "read_lines", "read_jsonl", "jsonl_records", "truncate_jsonl"]
