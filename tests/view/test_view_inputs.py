"""Bad input to grpo view and grpo rollouts, each answered by a sentence naming the value (a
4xx where the page cannot be what was asked), never a 500, a traceback or silence: a page
past the end, a filter on a column the log lacks, a step range of thirty million, a run's
file that is a directory, a port that is no port, a compare side that is no run, a wrong
token; and the address printed for ::1 and 0.0.0.0."""

from __future__ import annotations

import re
import tracemalloc
import urllib.error
import urllib.request
from html import unescape

import pytest

from grpo_core.cli import main
from grpo_core.runfiles import rollouts as rollout_log

from .conftest import make_run, rows_of
from .test_view_pages import get, groups


def test_a_page_past_the_end_shows_the_last_page_and_says_so(serve_runs, tmp_path):
    run = make_run(tmp_path / "run")
    # step 4: 50 groups of 3 (step 1's group 0 again and again): 6 + 50 = 56 groups, pages of 24: 3 pages
    rollout_log.write(run / "rollouts", 4, [dict(r, step=4, group=g, prompt_index=g)
                                            for g in range(50) for r in rows_of(1)[:3]])
    url = serve_runs(run)
    code, html = get(f"{url}/run/0/rollouts?page=999")
    html = unescape(html)
    assert code == 200 and "page 999 is past the last page of this filter (3): page 3 is shown." in html
    # page 3: groups 49-56, i.e. step 4's groups 42 to 49 (the 6 groups of steps 1-3 come first)
    assert "56 groups in all steps; groups 49-56 shown" in html and "23953" not in html
    assert groups(html) == [("4", str(g)) for g in range(42, 50)] and "page 3 of 3" in html


def test_a_filter_on_a_column_the_log_lacks_is_refused_with_the_columns_there_are(serve_runs, tmp_path, capsys):
    run = make_run(tmp_path / "run")
    url = serve_runs(run)
    code, html = get(f"{url}/run/0/rollouts?where=toy.rigth%3E0")
    html = unescape(html)
    assert code == 200 and groups(html) == []
    assert ("--where 'toy.rigth>0': this log has no column 'toy.rigth'; its rewards are toy.right, toy.format and "
            "its other columns step, round, group, prompt_index, tokens, truncated, tool_calls, total, advantage, "
            "extra/toy.right/answer.") in html
    code, html = get(f"{url}/run/0/rollouts?suspect=on&correctness=toy.wrong")
    assert "--correctness 'toy.wrong': this log has no reward 'toy.wrong'; its rewards are toy.right, toy.format." \
        in unescape(html)
    # a column the log has is no problem, whatever it matches (tokens < 0: none)
    code, html = get(f"{url}/run/0/rollouts?where=tokens%3C0")
    assert "this log has no" not in html and "0 groups match" in html
    # grpo rollouts: the same sentence, exit 2, before anything is listed
    assert main(["rollouts", str(run), "--where", "toy.rigth>0"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "Error: --where 'toy.rigth>0': this log has no column 'toy.rigth'; its rewards are " \
                             "toy.right, toy.format and its other columns step" in out.err
    assert main(["rollouts", str(run), "--suspect", "--correctness", "toy.wrong"]) == 2
    assert "this log has no reward 'toy.wrong'; its rewards are toy.right, toy.format." in capsys.readouterr().err


def test_a_step_range_of_thirty_million_costs_what_the_logged_steps_cost(toy_rewards, tmp_path, capsys):
    from starlette.datastructures import QueryParams

    from grpo_core.view.query import Query, select
    from grpo_core.view.runs import Run

    run = make_run(tmp_path / "run")
    view_run = Run(run, 0)
    q, problems = Query.of(QueryParams("steps=1-30000000&low=2"))
    tracemalloc.start()
    try:
        found = select(view_run, q)
        view_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        assert main(["rollouts", str(run), "--step", "2-30000000", "--where", "total>=2.5", "--json"]) == 0
        cli_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # a set of 30 million steps is over 1 GiB; the three logged steps' rows are a few hundred KiB
    assert problems == [] and (found.total, found.matched) == (4, 9) and view_peak < 20 * 2**20, view_peak
    assert cli_peak < 20 * 2**20, cli_peak
    # total 2.5 in steps 2-3: step 2's first completion, step 3's two answers of group 1
    assert capsys.readouterr().out.count('"total": 2.5') == 3
    assert main(["rollouts", str(run), "--step", "9-20"]) == 2
    assert "--step 9-20: no logged step there; the log has steps 1 to 3 (3 of them)." in capsys.readouterr().err
    assert main(["rollouts", str(run), "--step", "1" * 5000]) == 2  # not int()'s 4,300-digit traceback
    assert "give a step (12) or a range (10-20)" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["metrics.jsonl", "health.jsonl", "progress.json", "config.yaml"])
def test_a_runs_file_that_is_a_directory_is_a_sentence_on_that_run(serve_runs, tmp_path, monkeypatch, capsys, name):
    from grpo_core.commands import view

    bad = make_run(tmp_path / "bad")
    (bad / name).unlink()
    (bad / name).mkdir()
    good = make_run(tmp_path / "good")
    url = serve_runs(bad, good)
    pages = ["/", "/run/0", "/run/0/config", "/run/0/rollouts", "/run/0/rollouts?suspect=on", "/run/0/step/2",
             "/run/0/step/2/group/1", "/compare?a=0&b=1", "/compare?a_run=0&a_step=1&b_run=1&b_step=1"]
    for path in pages:
        code, html = get(url + path)
        assert code == 200, (path, html[-500:])
    said = {"metrics.jsonl": "bad/metrics.jsonl cannot be read (it is a directory, not a file)",
            "health.jsonl": "bad/health.jsonl cannot be read (it is a directory, not a file)",
            "progress.json": "bad/progress.json cannot be read (it is a directory)",
            "config.yaml": "bad: config.yaml is a directory, not the file grpo train writes"}[name]
    page = get(url + ("/run/0/config" if name == "config.yaml" else "/run/0"))[1]
    if said:
        assert said in unescape(page)
    assert len(re.findall('<div class="chart"', get(url + "/run/1")[1])) >= 10  # the other run whole
    # the command starts, names the problem, and serves
    monkeypatch.setattr(view, "serve", lambda *a, **k: None)
    assert main(["view", str(bad), str(good)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and (not said or name == "config.yaml" or said in err)


def test_a_port_that_is_no_port_is_refused_before_anything_starts(capsys, monkeypatch):
    from grpo_core.commands import view

    monkeypatch.setattr(view, "build", lambda args: pytest.fail(f"built a server for --port {args.port}"))
    for value, said in [("99999", "99999 is not a whole number in [1, 65535]"),
                        ("0", "0 is not a whole number in [1, 65535]"), ("http", "'http' is not a whole number")]:
        with pytest.raises(SystemExit) as caught:
            main(["view", "somewhere", "--port", value])
        err = capsys.readouterr().err
        assert caught.value.code == 2 and f"grpo view: error: argument --port: {said}" in err, err
        assert "Traceback" not in err


def test_a_compare_side_that_is_no_run_is_a_400(serve_runs, tmp_path):
    url = serve_runs(make_run(tmp_path / "a"), make_run(tmp_path / "b"))
    for query, said in [("a=-1&b=0", "a='-1' is not a run of this view: give a number from 0 to 1."),
                        ("a=0&b=2", "b='2' is not a run of this view"), ("a=0&b=x", "b='x' is not a run"),
                        ("a=0", "b: no run given"), ("a=0&b=1&c=7", "c='7' is not a run"),
                        ("a_run=0&a_step=-1&b_run=1&b_step=1", "a_step='-1' is not a step number"),
                        ("a=0&b=1&figure=nosuch", "figure='nosuch' is not a figure these runs logged; they logged: "
                                                  "reward, reward_std, rewards/toy.right/mean")]:
        code, html = get(f"{url}/compare?{query}")
        assert code == 400 and said in unescape(html), (query, code)
    # an empty c or d (the index page's form sends c=&d=) is no side, not an error
    code, html = get(f"{url}/compare?a=0&b=1&c=&d=")
    assert code == 200 and html.count('id="side-') == 2


def test_a_wrong_token_gets_401_and_no_cookie(serve_runs, tmp_path):
    url = serve_runs(make_run(tmp_path / "run"), token="s3cret")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    for wrong in ("wrong", "", "s3cre", "s3cret2", "S3CRET"):
        with pytest.raises(urllib.error.HTTPError) as caught:
            opener.open(f"{url}/run/0?token={wrong}", timeout=30)
        assert caught.value.code == 401 and caught.value.headers.get("set-cookie") is None, wrong
        assert "s3cret" not in caught.value.read().decode()
    with pytest.raises(urllib.error.HTTPError) as caught:  # the right one: a cookie, and the page again without it
        opener.open(f"{url}/run/0?token=s3cret", timeout=30)
    assert caught.value.code == 303 and caught.value.headers["set-cookie"].startswith("grpo_view_token=s3cret;")


def test_the_address_printed_can_be_opened_as_printed(tmp_path, capsys, monkeypatch):
    import socket

    from grpo_core.base.net import open_url
    from grpo_core.commands import view

    assert open_url("::1", 8010) == ("http://[::1]:8010/", None)
    assert open_url("127.0.0.1", 8010) == ("http://127.0.0.1:8010/", None)
    assert open_url("localhost", 8010) == ("http://localhost:8010/", None)
    url, note = open_url("0.0.0.0", 8010)
    assert url == "http://127.0.0.1:8010/" and f"http://{socket.gethostname()}:8010/" in note
    assert open_url("::", 8010)[0] == "http://[::1]:8010/"
    monkeypatch.setattr(view, "serve", lambda *a, **k: None)
    run = make_run(tmp_path / "run")
    assert main(["view", str(run), "--host", "::1", "--port", "8010"]) == 0
    assert "grpo view: http://[::1]:8010/ (" in capsys.readouterr().err
    monkeypatch.setenv("GRPO_SERVE_TOKEN", "t0k")
    assert main(["view", str(run), "--host", "0.0.0.0", "--port", "8010"]) == 0
    err = capsys.readouterr().err
    assert "grpo view: http://127.0.0.1:8010/ (" in err and "open http://127.0.0.1:8010/?token=..." in err
    assert f"it listens on every interface (0.0.0.0): from another machine open http://{socket.gethostname()}:8010/" \
        in err
