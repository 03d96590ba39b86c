"""One process prepares output_dir; the others wait for its outcome. Two processes
preparing one directory never race (the old shared write probe did)."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from grpo_core.errors import ConfigError
from grpo_core.run.outputs import prepare


def _prepare_many(rank: int, base: str, rounds: int, conn, failures) -> None:
    """Process ``rank`` prepares ``rounds`` fresh run folders; the main sends its outcome
    through the pipe, the other receives it (as a broadcast would)."""
    def share(value):
        if rank == 0:
            conn.send(value)
            return value
        return conn.recv()

    for i in range(rounds):
        root = Path(base) / f"run{i}" / "out"
        try:
            progress = prepare(root, [root], resume=False, overwrite=False, health=True, log=lambda m: None,
                               main=rank == 0, share=share)
            assert progress == {"stages": {}}
        except Exception as exc:  # noqa: BLE001 - counted, reported by the test
            failures.put(f"rank {rank} round {i}: {type(exc).__name__}: {exc}")


def test_two_processes_prepare_one_output_dir_a_thousand_times_without_a_failure(tmp_path):
    ctx = mp.get_context("fork")
    a, b = ctx.Pipe()
    failures = ctx.Queue()
    procs = [ctx.Process(target=_prepare_many, args=(rank, str(tmp_path), 1000, conn, failures))
             for rank, conn in ((0, a), (1, b))]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0]
    found = []
    while not failures.empty():
        found.append(failures.get())
    assert found == []
    # every run folder was made, once, with its (empty) health.jsonl and no probe left behind
    runs = sorted(tmp_path.glob("run*/out"))
    assert len(runs) == 1000 and all(sorted(p.name for p in r.iterdir()) == ["health.jsonl"] for r in runs)


def test_the_main_processs_error_stops_the_others_with_the_same_message(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    sent = []

    def share(value):
        sent.append(value)
        return value

    with pytest.raises(ConfigError, match="output_dir: cannot write or read"):
        prepare(blocker / "out", [blocker / "out"], resume=False, overwrite=False, health=True,
                log=print, main=True, share=share)
    # what the main process hands the others is the error itself: they raise it too
    with pytest.raises(ConfigError, match="output_dir: cannot write or read"):
        prepare(blocker / "out", [blocker / "out"], resume=False, overwrite=False, health=True,
                log=print, main=False, share=lambda value: sent[0])


def test_an_earlier_run_is_moved_aside_by_the_main_process_only(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    (root / "metrics.jsonl").write_text('{"step": 1}\n')
    moved = []
    # a non-main process does nothing to the folder: it only takes the main's outcome
    prepare(root, [root], resume=False, overwrite=False, health=True, log=moved.append, main=False,
            share=lambda value: {"stages": {}})
    assert (root / "metrics.jsonl").is_file() and moved == []
    prepare(root, [root], resume=False, overwrite=False, health=True, log=moved.append, main=True,
            share=lambda value: value)
    assert (tmp_path / "out.1" / "metrics.jsonl").is_file() and "moved it to" in moved[0]
