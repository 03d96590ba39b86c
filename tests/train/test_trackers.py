"""grpo's figures in the trackers named in report_to, beside TRL's: a tiny run reports to
trackio and one to TensorBoard, and the test reads back what each tracker stored (trackio's
SQLite database, TensorBoard's event files): held-out accuracy, a health event, a rollout
table of whole groups with their rewards and advantages, and TRL's own copy of grpo's
per-token figures."""

from __future__ import annotations

import json
import sys

import pytest

from .conftest import TINY

# a correctness reward (held-out accuracy), held-out prompts every step, and a 'flat reward'
# health event at step 2 (any two rewards move less than 100); 3 groups of 4 a step
RUN = ("--max_steps", "2", "--per_device_train_batch_size", "12", "--rewards", "test.exact", "test.short:0.1", "--no-check", "--dataset.eval_split", "test",
       "--heldout.every", "1", "--heldout.prompts", "4", "--health.flat_window", "2", "--health.flat_delta", "100")


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _logged(out):
    """(held-out accuracy per step, the health events, the rollout log's rows) from the run's own files."""
    import pyarrow.parquet as pq

    rows = [r for r in _jsonl(out / "metrics.jsonl") if "reward" in r]
    accuracy = {r["step"]: r["eval/accuracy"] for r in rows if "eval/accuracy" in r}
    log = {p.name: pq.read_table(p).to_pylist() for p in sorted((out / "rollouts").glob("step-*.parquet"))}
    return accuracy, _jsonl(out / "health.jsonl"), log


@pytest.fixture
def fresh_trackio(monkeypatch, tmp_path):
    """trackio writing into tmp_path (it reads TRACKIO_DIR once, when first imported)."""
    for name in [m for m in sys.modules if m == "trackio" or m.startswith("trackio.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio"))
    import trackio

    # a module that imported trackio before (TRL's profiling does, at its own import) logs
    # through the fresh one too: else it logs to a run the fresh trackio never started
    for module in list(sys.modules.values()):
        held = getattr(module, "trackio", None)
        if held is not trackio and getattr(held, "__name__", None) == "trackio":
            monkeypatch.setattr(module, "trackio", trackio)
    return tmp_path / "trackio"


def test_trackio_gets_held_out_accuracy_health_alerts_and_rollout_tables(grpo, fresh_trackio, tmp_path):
    code, out, err = grpo(TINY, *RUN, "--report_to", "trackio", "--project", "grpo-test", "--run_name", "tiny")
    assert code == 0, out + err
    accuracy, events, log = _logged(tmp_path / "out")
    assert sorted(accuracy) == [1, 2] and [e["check"] for e in events] == ["flat"] and len(log) == 2

    from trackio.sqlite_storage import SQLiteStorage

    assert SQLiteStorage.get_runs("grpo-test") == ["tiny"]
    stored = SQLiteStorage.get_logs("grpo-test", "tiny")
    ours = [r for r in stored if "eval/accuracy" in r]
    # held-out accuracy under its own name, at the step TRL's callback logged it
    assert [(r["train/global_step"], r["eval/accuracy"]) for r in ours] == sorted(accuracy.items())
    # grpo's per-token figures reach trackio through TRL's metrics, under train/
    trl = {r["train/global_step"]: r for r in stored if "train/tokens/generated" in r}
    assert sorted(trl) == [1, 2]
    steps = {r["step"]: r for r in _jsonl(tmp_path / "out" / "metrics.jsonl") if "tokens/generated" in r}
    assert [trl[s]["train/tokens/generated"] for s in (1, 2)] == [steps[s]["tokens/generated"] for s in (1, 2)]
    # the flat-reward event is an alert of the run, on the row of step 2 (trackio numbers its rows from 0)
    alerts = SQLiteStorage.get_alerts("grpo-test", "tiny")
    assert [(a["title"], a["step"]) for a in alerts] == [("grpo health: flat", trl[2]["step"])]
    assert [r["step"] for r in ours] == [trl[1]["step"], trl[2]["step"]]  # TRL's rows, not rows of our own
    assert alerts[0]["text"] == f"step 2: {events[0]['message']}"
    # a rollout table per step: the first 2 whole groups (4 completions each), as the log has them
    tables = [r for r in stored if "grpo/rollouts" in r]
    assert [r["train/global_step"] for r in tables] == [1, 2]
    for stored_table, (name, rows) in zip(tables, sorted(log.items())):
        table = stored_table["grpo/rollouts"]
        data = table.get("_value", table)
        data = data if isinstance(data, list) else json.loads(data)
        expected = [r for r in rows if r["group"] in (0, 1)]
        assert len(data) == 8 == len(expected) and len(rows) == 12, name
        for got, want in zip(data, expected):
            assert (got["group"], got["completion"], got["reward/test.exact"], got["total"], got["advantage"]) == \
                (want["group"], want["completion"], want["reward/test.exact"], want["total"], want["advantage"])


def _tensorboard(out):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = list(out.rglob("events.out.tfevents.*"))
    assert len(files) == 1, files  # grpo writes with TRL's own writer, into its one file
    acc = EventAccumulator(str(files[0].parent), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    return acc


def _text(acc, tag):
    return [(e.step, e.tensor_proto.string_val[0].decode()) for e in acc.Tensors(tag)]


def test_tensorboard_gets_held_out_accuracy_health_events_and_rollout_tables(grpo, tmp_path):
    code, out, err = grpo(TINY, *RUN, "--report_to", "tensorboard")
    assert code == 0, out + err
    # the end-of-run summary says how to look at the run
    assert f"See it in the browser (curves, every completion with its rewards and advantage): grpo view " \
        f"{tmp_path / 'out'}" in out.splitlines()
    accuracy, events, log = _logged(tmp_path / "out")
    acc = _tensorboard(tmp_path / "out")
    tags = acc.Tags()
    got = {e.step: e.value for e in acc.Scalars("eval/accuracy")}
    assert got == pytest.approx(accuracy) and sorted(got) == [1, 2]
    assert "train/tokens/teaching_share" in tags["scalars"]  # TRL's metrics carry grpo's per-token figures
    # no alerts in TensorBoard: the event is text at its step
    assert _text(acc, "grpo/health/flat/text_summary") == [(2, f"step 2: {events[0]['message']}")]
    tables = _text(acc, "grpo/rollouts/text_summary")
    assert [step for step, _ in tables] == [1, 2]
    header, rule, *lines = tables[0][1].splitlines()
    assert header.split(" | ")[:4] == ["| step", "round", "group", "trained"] or header.startswith("| step | round")
    assert "reward/test.exact" in header and header.endswith("| total | advantage |")
    first = log["step-000001.parquet"]
    assert len(lines) == 8  # 2 whole groups of 4
    cells = lines[0].split(" | ")
    assert cells[-1] == f"{first[0]['advantage']:.3f} |"
    assert cells[-2] == f"{first[0]['total']:.3f}"


def test_sample_takes_whole_groups_trained_first():
    from grpo_core.run.trackers import sample

    rows = [{"step": 3, "round": rd, "group": g, "trained": tr, "prompt": "p", "completion": f"c{rd}{g}{i}",
             "reward/a": 1.0, "total": 1.0, "advantage": 0.5}
            for rd, g, tr in [(0, 0, False), (0, 1, True), (1, 0, True)] for i in range(2)]
    columns, data = sample(rows, 2)
    assert [row[columns.index("completion")] for row in data] == ["c010", "c011", "c100", "c101"]
    assert columns == ["step", "round", "group", "trained", "prompt", "completion", "reward/a", "total", "advantage"]


# what a model can write that markdown or HTML would take for markup, or a browser would fold
WRITTEN = ["2*3*4 = 24", "def __init__(self): return `x`", "a | b || c", "<td>cell</td></table><h1>big</h1>",
           "AT&T &amp; &lt;b&gt; &#42;", "line 1\nline 2\r\nline 3\rline 4\x1cline 5\u2028line 6",
           "    indented\n  two  spaces  ", "[link](http://x.y) ![img](z.png) <http://auto.link> \\*not\\*",
           "~~strike~~ **bold** _it_ {attr} #1 1. - + : \" ' = $x$ ^", "".join(chr(c) for c in range(33, 127))]


class _Cells(__import__("html.parser").parser.HTMLParser):
    """Rendered HTML as a browser shows it: each table's rows of cells, each cell's visible text
    (character references read, each <br> a line break, runs of spaces and line ends folded as
    HTML folds them, a non-breaking space shown as a space); and every tag seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.tags, self._open, self._cells = [], set(), [], []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
            self._open.append(self.tables[-1])
        elif tag == "tr":
            self._open[-1].append([])
        elif tag in ("td", "th"):
            self._cells.append([])
        elif tag == "br" and self._cells:
            self._cells[-1].append("\0")

    def handle_endtag(self, tag):
        import re

        if tag == "table":
            self._open.pop()
        elif tag in ("td", "th"):
            lines = "".join(self._cells.pop()).split("\0")
            self._open[-1][-1].append("\n".join(re.sub(r"[ \t\n\r\f]+", " ", x).strip(" \t\n\r\f")
                                                .replace("\xa0", " ") for x in lines))

    def handle_data(self, data):
        if self._cells:
            self._cells[-1].append(data)


def test_tensorboard_shows_each_completion_exactly_as_written(tmp_path):
    """Completions full of markdown and HTML, and line breaks of every kind, go through
    TensorBoard's own writer into an event file; read back and rendered by TensorBoard's text
    plugin (its markdown, then its HTML sanitizer), each cell shows what the model wrote."""
    import re
    import types

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.text.text_plugin import text_array_to_html
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter
    from transformers.integrations import TensorBoardCallback

    from grpo_core.run.trackers import TrackerCallback
    from grpo_core.trainer import rollout_log

    rows = [{"step": 1, "round": 0, "group": i // 5, "prompt": f"<b>prompt</b> {i} *", "completion": text,
             "reward/a_b": 0.5, "total": 0.5, "advantage": -0.25} for i, text in enumerate(WRITTEN)]
    rollout_log.write(tmp_path / "rollouts", 1, rows)
    writer = SummaryWriter(str(tmp_path / "tb"))
    trainer = types.SimpleNamespace(callback_handler=types.SimpleNamespace(callbacks=[TensorBoardCallback(writer)]))
    cb = TrackerCallback(tmp_path)
    cb.bind(trainer)
    state = types.SimpleNamespace(global_step=1, is_world_process_zero=True)
    cb.on_log(None, state, None, logs={"reward": 0.5})
    writer.close()

    acc = EventAccumulator(str(tmp_path / "tb"), size_guidance={"tensors": 0})
    acc.Reload()
    [event] = acc.Tensors("grpo/rollouts/text_summary")
    page = _Cells()
    page.feed(text_array_to_html(tensor_util.make_ndarray(event.tensor_proto), enable_markdown=True))
    assert page.tags <= {"table", "thead", "tbody", "tr", "th", "td", "br"}  # no <em>, <strong>, <code>, <h1>
    # (TensorBoard shows the one string the writer stores in a table of its own: ours is inside)
    [(header, *cells)] = [t for t in page.tables if t and t[0][:2] == ["step", "round"]]
    assert header == ["step", "round", "group", "prompt", "completion", "reward/a_b", "total", "advantage"]
    shown = [re.sub("\r\n|[\r\x1c\u2028]", "\n", text) for text in WRITTEN]  # each line break shows as one
    assert [row[4] for row in cells] == shown
    assert [row[3] for row in cells] == [f"<b>prompt</b> {i} *" for i in range(len(WRITTEN))]
    assert cells[0][:3] + cells[0][5:] == ["1", "0", "0", "0.500", "0.500", "-0.250"]


class _Recorder:
    """Stands in for a tracker module: records each call by name."""

    def __init__(self, **attrs):
        self.calls: list[tuple] = []
        self.__dict__.update(attrs)

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


def test_wandb_and_mlflow_get_alerts_text_and_tables_through_their_own_calls(tmp_path, monkeypatch):
    """wandb and MLflow are not installed here: stand-ins record what grpo calls, with the
    signatures of wandb 0.2x (run.alert, run.log, wandb.Table) and MLflow 2-3 (log_text, log_table)."""
    import types

    from grpo_core.run.trackers import TrackerCallback
    from grpo_core.trainer import rollout_log

    run = _Recorder()
    wandb = _Recorder(run=run, AlertLevel=types.SimpleNamespace(WARN="WARN"),
                      Table=lambda columns, data: ("Table", columns, data))
    mlflow = _Recorder(active_run=lambda: object())
    monkeypatch.setitem(sys.modules, "wandb", wandb)
    monkeypatch.setitem(sys.modules, "mlflow", mlflow)
    WandbCallback = type("WandbCallback", (), {})
    MLflowCallback = type("MLflowCallback", (), {})
    trainer = types.SimpleNamespace(callback_handler=types.SimpleNamespace(callbacks=[WandbCallback(), MLflowCallback()]))
    (tmp_path / "health.jsonl").write_text("")
    cb = TrackerCallback(tmp_path, offset=10)
    cb.bind(trainer)
    state = types.SimpleNamespace(global_step=0, is_world_process_zero=True)
    cb.on_train_begin(None, state, None)
    rows = [{"step": 11, "round": 0, "group": g, "prompt": "p", "completion": f"c{g}{i}", "reward/a": 1.0,
             "total": 1.0, "advantage": 0.0} for g in range(3) for i in range(2)]
    rollout_log.write(tmp_path / "rollouts", 11, rows)
    with open(tmp_path / "health.jsonl", "a") as f:
        f.write(json.dumps({"step": 11, "check": "kl", "message": "kl high"}) + "\n")
    state.global_step = 1
    cb.on_log(None, state, None, logs={"reward": 1.0, "eval/accuracy": 0.5})
    columns = ["step", "round", "group", "prompt", "completion", "reward/a", "total", "advantage"]
    table = [[11, 0, g, "p", f"c{g}{i}", 1.0, 1.0, 0.0] for g in (0, 1) for i in range(2)]
    assert run.calls == [("alert", (), {"title": "grpo health: kl", "text": "step 11: kl high", "level": "WARN"}),
                         ("log", ({"eval/accuracy": 0.5, "grpo/rollouts": ("Table", columns, table),
                                   "train/global_step": 1},), {})]
    assert mlflow.calls == [("log_text", ("step 11: kl high\n", "grpo/health/step-000001-kl.txt"), {}),
                            ("log_table", ({c: [row[i] for row in table] for i, c in enumerate(columns)},),
                             {"artifact_file": "grpo/rollouts/step-000001.json"})]
    cb.on_log(None, state, None, logs={"reward": 1.0})  # nothing new: nothing sent
    assert len(run.calls) == 2 and len(mlflow.calls) == 2


def test_trackio_stores_each_completion_as_written(fresh_trackio, tmp_path):
    """trackio's dashboard (0.4x) shows a table cell as plain text, so grpo hands it the
    completions untouched: no markdown or HTML escaping, which it would show literally."""
    import types

    import trackio
    from trackio.sqlite_storage import SQLiteStorage

    from grpo_core.run.trackers import TrackerCallback
    from grpo_core.trainer import rollout_log

    rows = [{"step": 1, "round": 0, "group": 0, "prompt": "p", "completion": text, "total": 0.5, "advantage": 0.0}
            for text in WRITTEN]
    rollout_log.write(tmp_path / "rollouts", 1, rows)
    trackio.init(project="grpo-test", name="written")
    trainer = types.SimpleNamespace(callback_handler=types.SimpleNamespace(
        callbacks=[type("TrackioCallback", (), {})()]))
    cb = TrackerCallback(tmp_path)
    cb.bind(trainer)
    cb.on_log(None, types.SimpleNamespace(global_step=1, is_world_process_zero=True), None, logs={"reward": 0.5})
    trackio.finish()
    [logged] = [r for r in SQLiteStorage.get_logs("grpo-test", "written") if "grpo/rollouts" in r]
    table = logged["grpo/rollouts"]
    data = table.get("_value", table)
    assert [row["completion"] for row in data] == WRITTEN
