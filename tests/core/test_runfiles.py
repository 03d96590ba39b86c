"""The run folder's formats (grpo_core.runfiles): progress.json and every rollout-log file
carry the format they were written in; a reader meeting a newer one says so, naming the file
and the upgrade, instead of misreading it; files written before the format was recorded
(format 1) read as before."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grpo_core.base.errors import GrpoError
from grpo_core.cli import main
from grpo_core.runfiles import FORMAT, format_problem
from grpo_core.runfiles import rollouts as rollout_log
from grpo_core.runfiles.jsonl import read_jsonl
from grpo_core.runfiles.progress import read_progress, read_stages, write_progress

ROW = {"step": 1, "stage": "main", "round": 0, "group": 0, "prompt_index": 0, "prompt": "What is 1 + 1?",
       "completion": "2", "tokens": 1, "truncated": False, "tool_calls": 0, "reward/toy.right": 1.0, "total": 1.0,
       "advantage": 0.0}

NEWER = ("was written by a newer grpo (run-folder format 2; this grpo-core reads up to 1): upgrade grpo-core "
         "to read it.")


def test_progress_json_carries_the_format_and_reads_back_its_stages(tmp_path):
    assert FORMAT == 1
    write_progress(tmp_path, {"stages": {"main": {"done": True, "steps": 4}}})
    written = json.loads((tmp_path / "progress.json").read_text())
    assert written == {"format": 1, "stages": {"main": {"done": True, "steps": 4}}} and list(written)[0] == "format"
    assert read_stages(tmp_path / "progress.json") == ({"main": {"done": True, "steps": 4}}, None)
    # read back and written again (a second stage done): one format key, not two
    progress = read_progress(tmp_path)
    progress["stages"]["hard"] = {"done": True, "steps": 2}
    write_progress(tmp_path, progress)
    assert json.loads((tmp_path / "progress.json").read_text())["format"] == 1


def test_a_progress_json_of_a_newer_format_is_not_read_as_this_one(tmp_path):
    path = tmp_path / "progress.json"
    path.write_text(json.dumps({"format": 2, "stages": {"main": {"done": True, "steps": 4}}}))
    assert read_stages(path) == ({}, f"progress.json {NEWER} The run's state is judged from its other files.")
    path.write_text(json.dumps({"format": "two", "stages": {}}))
    assert read_stages(path)[1] == ("progress.json names run-folder format 'two', which is not a format grpo writes "
                                    "(1 to 1). The run's state is judged from its other files.")
    path.write_text(json.dumps({"stages": {"main": {"done": True}}}))  # written before the format was recorded
    assert read_stages(path) == ({"main": {"done": True}}, None)


def test_format_problem_takes_only_whole_numbers_up_to_this_grpos():
    assert [format_problem(v, "f") for v in (None, 1)] == [None, None]
    assert format_problem(True, "f") == "f names run-folder format True, which is not a format grpo writes (1 to 1)."
    assert format_problem(0, "f").startswith("f names run-folder format 0,")
    assert format_problem(2, "f") == f"f {NEWER}"


def write_format(path, fmt: bytes | None) -> None:
    table = pa.Table.from_pylist([ROW])
    pq.write_table(table.replace_schema_metadata({b"grpo.format": fmt} if fmt else None), path)


def test_a_rollout_file_carries_the_format_and_an_older_one_still_reads(tmp_path):
    folder = tmp_path / "rollouts"
    path = rollout_log.write(folder, 1, [ROW])
    assert pq.read_schema(path).metadata[b"grpo.format"] == b"1"
    write_format(folder / "step-000002.parquet", None)  # a file from before the format was recorded
    rows = rollout_log.read(tmp_path).to_pylist()
    assert [r["step"] for r in rows] == [1, 1] and rows[0] == ROW


def test_a_rollout_file_of_a_newer_format_is_refused_by_grpo_rollouts_and_named_by_grpo_view(tmp_path, capsys):
    from grpo_core.view.runs import Run

    run = tmp_path / "run"
    rollout_log.write(run / "rollouts", 1, [ROW])
    write_format(run / "rollouts" / "step-000002.parquet", b"2")
    with pytest.raises(GrpoError, match="rollouts/step-000002.parquet was written by a newer grpo"):
        rollout_log.read(run)
    assert main(["rollouts", str(run)]) == 2
    assert f"Error: rollouts/step-000002.parquet {NEWER}" in capsys.readouterr().err
    entries, problems = Run(run, 0).log.entries()
    assert [len(e.rows) for e in entries] == [1, 0]  # step 1 served, step 2 left out
    assert problems == [f"rollouts/step-000002.parquet {NEWER} Its step is left out."]


def test_metrics_jsonl_is_read_past_a_cut_off_line_and_an_unreadable_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step": 1, "reward": 0.5}\n[1, 2]\n{"step": 2, "rew')
    assert read_jsonl(path) == [{"step": 1, "reward": 0.5}]  # a list line and the half-written last one skipped
    path.write_bytes(b'{"step": 1, "note": "\xff"}\n')  # not UTF-8: read, the byte replaced
    assert read_jsonl(path) == [{"step": 1, "note": "\ufffd"}]
    assert read_jsonl(tmp_path) == [] and read_jsonl(tmp_path / "absent.jsonl") == []
