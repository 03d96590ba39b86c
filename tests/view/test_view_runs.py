"""What grpo view says about each run it serves: its state read from what the run wrote
(progress.json, its final weights, its checkpoints), its name when two runs share a folder
name or a name holds `$...$`, and a link to every logged step."""

from __future__ import annotations

import json
import os
import re
import time

from grpo_core.runfiles import rollouts as rollout_log
from grpo_core.view.runs import Run, labels

from .conftest import make_run, rows_of
from .test_view_pages import get


def age(run, seconds: float) -> None:
    """Every file and folder of ``run`` last written ``seconds`` ago."""
    when = time.time() - seconds
    for path in [run, *run.rglob("*")]:
        os.utime(path, (when, when))


def test_a_finished_run_copied_without_its_weights_says_finished(serve_runs, tmp_path):
    # a GPU run copied to a laptop without adapter/: progress.json says the stage is done
    copied = make_run(tmp_path / "copied")
    (copied / "adapter").rmdir()
    assert json.loads((copied / "progress.json").read_text())["stages"]["main"]["done"] is True
    just_now = make_run(tmp_path / "just_now")  # the same, and written a moment ago: still finished
    (just_now / "adapter").rmdir()
    age(copied, 3600)
    url = serve_runs(copied, just_now)
    for i in (0, 1):
        code, html = get(f"{url}/run/{i}")
        assert code == 200 and "finished (its final weights are not in this folder)" in html
        assert "still training" not in html and "resume" not in html and 'http-equiv="refresh"' not in html
    code, html = get(f"{url}/")
    assert html.count("finished (its final weights are not in this folder)") == 2


def test_a_stopped_run_names_its_last_checkpoint_and_a_fresh_one_is_training(toy_rewards, tmp_path):
    stopped = make_run(tmp_path / "stopped", finished=False)
    for step in (1, 2):
        (stopped / f"checkpoint-{step}").mkdir()
        (stopped / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (stopped / "checkpoint-3").mkdir()  # being written: no trainer_state.json yet, not resumable
    age(stopped, 7200)
    state = Run(stopped, 0).state()
    assert (state.finished, state.training, state.checkpoint) == (False, False, "checkpoint-2")
    assert state.text(now=state.last_write + 7200).startswith(
        "not finished: last written 2.0 h ago, stopped (its last checkpoint is checkpoint-2: grpo train ... --resume")
    fresh = make_run(tmp_path / "fresh", finished=False)
    state = Run(fresh, 0).state()
    assert state.training and state.text(now=state.last_write + 50) == "still training (last written 50 s ago)"
    # two stages, the first done: not finished (its final/ is the first stage's); the second done too: finished
    staged = make_run(tmp_path / "staged", finished=False)
    (staged / "config.yaml").write_text("stages:\n- name: easy\n  rewards: [toy.right]\n- name: hard\n"
                                        "  rewards: [toy.right]\n")
    progress = {"stages": {"easy": {"done": True, "steps": 2, "final": str(staged / "easy" / "final")}}}
    (staged / "progress.json").write_text(json.dumps(progress))
    (staged / "easy" / "final").mkdir(parents=True)
    age(staged, 3600)
    assert not Run(staged, 0).state().finished
    progress["stages"]["hard"] = {"done": True, "steps": 1, "final": str(staged / "hard" / "final")}
    (staged / "progress.json").write_text(json.dumps(progress))
    state = Run(staged, 0).state()
    assert state.finished and state.text() == "finished (its final weights are not in this folder)"


def test_runs_are_told_apart_by_the_shortest_path_that_differs(tmp_path):
    a, b, c = tmp_path / "A" / "run", tmp_path / "B" / "run", tmp_path / "B" / "other"
    assert labels([a, b, c]) == ["A/run", "B/run", "other"]
    assert labels([a]) == ["run"]
    assert labels([tmp_path / "x" / "A" / "run", tmp_path / "y" / "A" / "run"]) == ["x/A/run", "y/A/run"]
    assert labels([a, a]) == ["run #0", "run #1"]  # the same folder twice: by its place


def test_a_dollar_name_and_two_folders_named_alike_compare(serve_runs, tmp_path):
    # matplotlib read a legend's "$x^$" as mathtext and failed: a 500 with an empty "ValueError:"
    dollar = make_run(tmp_path / "lr $x^$ <b>")
    url = serve_runs(make_run(tmp_path / "A" / "run"), make_run(tmp_path / "B" / "run", steps=(1, 2)), dollar)
    code, html = get(f"{url}/compare?a=0&b=1&c=2")
    assert code == 200, html[-600:]
    chart = html.split('id="chart-rewards"')[1].split("</svg>")[0]
    legend = re.findall(r'<text x="\d+" y="\d+" font-size="9">([^<]*)</text>', chart)
    assert legend == ["A/run", "B/run", "lr $x^$ &lt;b&gt;"]  # as written, escaped
    assert '<a href="/run/0">A/run</a>' in html and '<a href="/run/1">B/run</a>' in html
    assert "<b>" not in html.split("<main>")[1]


def test_the_run_page_links_every_logged_step(serve_runs, tmp_path, monkeypatch):
    from grpo_core.view import app

    run = make_run(tmp_path / "run", steps=(1, 2, 3))
    for step in range(4, 61):  # 60 steps: the page linked 40 of them, spaced out
        rollout_log.write(run / "rollouts", step, [dict(r, step=step) for r in rows_of(1)])
    url = serve_runs(run)
    code, html = get(f"{url}/run/0")
    linked = [int(s) for s in re.findall(r'<a href="/run/0/step/(\d+)">', html)]
    assert linked == list(range(1, 61)) and "60 logged steps (1 to 60)" in html
    # past STEP_LINKS steps: that many at a time, with earlier / later
    monkeypatch.setattr(app, "STEP_LINKS", 25)
    html = get(f"{url}/run/0")[1]
    assert [int(s) for s in re.findall(r'<a href="/run/0/step/(\d+)">', html)] == list(range(1, 26))
    assert 'href="/run/0?from=26#steps">later steps' in html and "earlier steps" not in html
    html = get(f"{url}/run/0?from=26")[1]
    assert [int(s) for s in re.findall(r'<a href="/run/0/step/(\d+)">', html)] == list(range(26, 51))
    assert 'href="/run/0?from=1#steps">earlier' in html and 'href="/run/0?from=51#steps">later' in html
    html = get(f"{url}/run/0?from=99999")[1]  # past the end: the last block
    assert [int(s) for s in re.findall(r'<a href="/run/0/step/(\d+)">', html)] == list(range(36, 61))
