"""grpo view's pages over HTTP (a server in a thread, as the command starts it): what the
filters pick in the hand-made run (tests/view/conftest.py), the bad inputs a user meets
(each a sentence on the page, the server serving on), the token rule, and that the view
never writes the run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from html import unescape
from pathlib import Path

import pytest

from .conftest import make_run


def get(url: str, headers: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def groups(html: str) -> list[str]:
    """The groups on a page, as 'step S / group G', in order."""
    return re.findall(r'<section class="group" id="step(\d+)-round0-group(\d+)"', html)


def marked(html: str) -> int:
    return html.count('<tr class="match">')


def test_filters_pick_what_grpo_rollouts_picks(serve_runs, tmp_path):
    url = serve_runs(make_run(tmp_path / "run"))
    # total in [2, 2.5]: 2.5 and 2.0 in step 1 group 0, three in step 2 group 0 (2.5, 2.0) and all of
    # group 1 (2.0 x3), two 2.5s in step 3 group 1: 4 groups, 9 completions
    code, html = get(f"{url}/run/0/rollouts?low=2&high=2.5")
    assert code == 200
    assert groups(html) == [("1", "0"), ("2", "0"), ("2", "1"), ("3", "1")] and marked(html) == 9
    assert "4 groups match (9 completions) in all steps" in html
    # suspect: toy.right 0 yet the group's best total (0.5 over 0, 0): row 0 of step 1 group 1, of step 3 group 0
    code, html = get(f"{url}/run/0/rollouts?suspect=on")
    assert groups(html) == [("1", "1"), ("3", "0")] and marked(html) == 2
    # empty: the one empty completion; where: grpo rollouts' expression; a range on one reward in one step
    assert groups(get(f"{url}/run/0/rollouts?empty=on")[1]) == [("1", "1")]
    assert groups(get(f"{url}/run/0/rollouts?where=toy.format%3E%3D1&steps=3")[1]) == [("3", "0"), ("3", "1")]
    code, html = get(f"{url}/run/0/rollouts?steps=2&reward=toy.right&high=0")
    assert groups(html) == [("2", "0")] and marked(html) == 1
    # a group's page: every completion whole, each reward, total and advantage
    code, html = get(f"{url}/run/0/step/3/group/0")
    assert code == 200 and html.count("&lt;answer&gt;7&lt;/answer&gt;") == 1
    # advantages: totals 0.5, 0, 0 less their mean 1/6
    assert re.findall(r'<td class="num">(-?0\.\d+)</td><td class="num">\d+</td></tr>', html) == ["0.333", "-0.167", "-0.167"]


def test_model_text_is_shown_as_text_never_as_markup(serve_runs, tmp_path):
    from grpo_core.runfiles import rollouts as rollout_log

    run = make_run(tmp_path / "run")
    rows = rollout_log.read(run, steps=[1]).to_pylist()
    rows[0]["completion"] = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    rollout_log.write(run / "rollouts", 1, rows)
    code, html = get(f"{serve_runs(run)}/run/0/step/1")
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img" in html


def test_bad_runs_are_sentences_on_the_page_and_the_view_serves_on(serve_runs, tmp_path):
    good = make_run(tmp_path / "good")
    half = tmp_path / "half"
    half.mkdir()
    (half / "config.yaml").write_text("rewards: [toy.right]\n")  # grpo train wrote its config, then nothing
    cut = make_run(tmp_path / "cut", finished=False)  # still writing: a cut-off line, a step's file damaged
    with open(cut / "metrics.jsonl", "a") as f:
        f.write('{"step": 4, "reward": 0.')
    (cut / "rollouts" / "step-000002.parquet").write_bytes(b"PAR1 not really parquet")
    url = serve_runs(tmp_path / "missing", half, cut, good)
    code, html = get(f"{url}/run/0")
    assert code == 200 and f"{tmp_path / 'missing'} does not exist" in unescape(html)
    code, html = get(f"{url}/run/1")
    assert code == 200 and "half/metrics.jsonl is missing: the run has logged no step yet" in html
    code, html = get(f"{url}/run/2")
    assert "metrics.jsonl: line 4 is cut off (the run may be writing it); the 3 records before it are shown." in html
    assert "still training (last written" in html and 'http-equiv="refresh"' in html
    code, html = get(f"{url}/run/2/rollouts")
    assert "rollouts/step-000002.parquet cannot be read" in html and "its step is left out" in html
    assert groups(html) == [("1", "0"), ("1", "1"), ("3", "0"), ("3", "1")]  # the other steps are served
    code, html = get(f"{url}/run/2/step/2")
    assert code == 200 and "step-000002.parquet cannot be read" in html
    code, html = get(f"{url}/run/3/rollouts?low=abc&steps=x-y&where=oops")
    html = unescape(html)
    assert code == 200 and "low='abc' is not a number" in html and "steps 'x-y': give a step" in html
    assert "--where 'oops': write COLUMN OP NUMBER" in html
    assert get(f"{url}/run/9")[0] == 404 and get(f"{url}/run/3/step/99")[0] == 404
    code, html = get(f"{url}/")
    assert code == 200 and html.count('<a href="/run/') == 4 and "finished" in html
    code, html = get(f"{url}/run/3")  # still serving, and the good run is whole
    assert code == 200 and html.count('<div class="chart"') >= 3 and "flat" in html
    # the run still writing logs step 4: the next page has it
    from grpo_core.runfiles import rollouts as rollout_log

    rollout_log.write(cut / "rollouts", 4, [dict(r, step=4) for r in rollout_log.read(good, steps=[1]).to_pylist()])
    assert groups(get(f"{url}/run/2/rollouts?steps=3-4")[1]) == [("3", "0"), ("3", "1"), ("4", "0"), ("4", "1")]


def test_the_view_only_reads_the_run(serve_runs, tmp_path):
    run = make_run(tmp_path / "run")

    def snapshot():
        return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(run.rglob("*")) if p.is_file()}

    before = snapshot()
    url = serve_runs(run)
    for path in ["/", "/run/0", "/run/0/rollouts?suspect=on", "/run/0/step/2", "/run/0/step/2/group/1",
                 "/compare?a_run=0&a_step=1&b_run=0&b_step=3"]:
        assert get(url + path)[0] == 200, path
    assert snapshot() == before


def test_two_runs_and_two_steps_compared(serve_runs, tmp_path):
    url = serve_runs(make_run(tmp_path / "a"), make_run(tmp_path / "b", steps=(1, 2)))
    code, html = get(f"{url}/compare?a=0&b=1")
    assert code == 200 and html.count('id="side-') == 2 and '<div class="chart"' in html
    assert re.search(r"steps logged</th><td class=\"num\">3<", html) and re.search(r"steps logged</th><td class=\"num\">2<", html)
    code, html = get(f"{url}/compare?a_run=0&a_step=1&b_run=1&b_step=2")
    # mean totals: step 1 (2.5 + 2 + 0 + 0.5 + 0 + 0) / 6, step 2 (2.5 + 0.5 + 2 + 2 + 2 + 2) / 6
    assert re.findall(r"mean total</th><td class=\"num\">([\d.]+)<", html) == ["0.833", "1.833"]


def test_off_loopback_needs_a_token_and_a_browser_gives_it_once(serve_runs, tmp_path, monkeypatch):
    from grpo_core.base.errors import GrpoError
    from grpo_core.serve.server import check_bind

    monkeypatch.delenv("GRPO_SERVE_TOKEN", raising=False)
    with pytest.raises(GrpoError, match="refusing to bind 0.0.0.0 without a token"):
        check_bind("0.0.0.0", None)
    url = serve_runs(make_run(tmp_path / "run"), token="s3cret")
    assert get(f"{url}/run/0")[0] == 401
    assert get(f"{url}/run/0", {"Authorization": "Bearer wrong"})[0] == 401
    assert get(f"{url}/run/0", {"Authorization": "Bearer s3cret"})[0] == 200

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener.open(f"{url}/run/0?token=s3cret&steps=2", timeout=30)
    assert caught.value.code == 303 and caught.value.headers["location"] == "/run/0?steps=2"
    cookie = caught.value.headers["set-cookie"].split(";")[0]
    assert "HttpOnly" in caught.value.headers["set-cookie"]
    assert get(f"{url}/run/0", {"Cookie": cookie})[0] == 200


def test_view_help_imports_neither_torch_nor_trl():
    code = ("import sys\nfrom grpo_core.cli import main\ntry:\n    main(['view', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', [m for m in ('torch', 'trl', 'transformers') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "GRPO_PLUGINS": ""})
    assert "grpo view" in out.stdout or "RUN_DIR" in out.stdout
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


def test_a_missing_run_is_named_when_the_command_starts(tmp_path, capsys, monkeypatch):
    from grpo_core.commands import view

    served = {}
    monkeypatch.setattr(view, "serve", lambda app, host, port, token, graceful: served.update(host=host, port=port))
    from grpo_core.cli import main

    assert main(["view", str(tmp_path / "nope"), "--port", "8123"]) == 0
    err = capsys.readouterr().err
    assert f"warning: run 0: {tmp_path / 'nope'} does not exist" in err and "http://127.0.0.1:8123/" in err
    assert served == {"host": "127.0.0.1", "port": 8123}
    assert main(["view", str(tmp_path), "--host", "0.0.0.0"]) == 2  # no token: refused before serving
    assert "refusing to bind 0.0.0.0 without a token" in capsys.readouterr().err
    assert Path(tmp_path).is_dir()


def test_a_filter_reads_only_the_steps_its_page_needs_until_the_log_is_read(toy_rewards, tmp_path):
    from starlette.datastructures import QueryParams

    from grpo_core.view.query import Query, select
    from grpo_core.view.runs import Run

    run = Run(make_run(tmp_path / "run"), 0)
    q, problems = Query.of(QueryParams("low=2&high=2.5"))
    found = select(run, q, per_page=1)
    # a page of one group: step 1's group 0 fills it, steps 2 and 3 are not read (counted as unread)
    assert (found.total, found.unread, [(g.step, g.group) for g in found.groups], problems) == (1, 2, [(1, 0)], [])
    run.warm()
    found = select(run, q, per_page=1)
    assert (found.total, found.matched, found.unread) == (4, 9, 0)
    assert [(g.step, g.group) for g in select(run, Query(low=2, high=2.5, page=3), per_page=1).groups] == [(2, 1)]
