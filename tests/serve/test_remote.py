"""grpo as a client of `grpo serve`: the `remote.server` reward scores as the rewards
in process do, and a server that is down or slow is a counted, time-limited failure."""

from __future__ import annotations

import json

import pytest

from tests.serve.test_serve import SPECS, grpo_score, rows


def test_grpo_score_through_a_server_matches_in_process(serving, tmp_path):
    data = rows(40)
    expected = grpo_score(tmp_path, data)
    from grpo_core.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "remote.jsonl"
    with serving() as url:
        specs = [f"remote.server(url={url!r})", f"remote.server(url={url!r}, reward='math.correctness')"]
        src.write_text("".join(json.dumps(r) + "\n" for r in data))
        assert main(["score", "--rewards", *specs, "--input", str(src), "--output", str(out), "--no-progress"]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    total, correctness = (k for k in got[0] if k.startswith("remote.server"))  # logged by their specs
    assert [g[total] for g in got] == [e["total"] for e in expected]
    assert [g[correctness] for g in got] == [e["math.correctness"] for e in expected]
    assert SPECS[0].startswith("math.correctness") and any(e["format.think_answer_r1"] for e in expected)


def test_a_server_that_is_down_scores_none_counted_as_errors(installed):
    from grpo_core.rewards.policy import guard_rewards
    from grpo_core.rewards.reward import compose_rewards
    from grpo_core.serve.server import free_port

    funcs, _ = compose_rewards([f"remote.server(url='http://127.0.0.1:{free_port()}')"])
    lines = []
    (guarded,) = guard_rewards(funcs, max_share=1.0, log=lines.append)
    assert guarded(completions=["Answer: 4", "5"], answer=["4", "5"]) == [None, None]
    assert guarded.errors == 2 and "cannot be reached" in lines[0]


def test_a_slow_server_is_a_time_limited_failure(serving, tmp_path, monkeypatch):
    import time

    (tmp_path / "sleepy.py").write_text("import time\ndef sleepy(completions, **kw):\n"
                                        "    time.sleep(2)\n    return [1.0] * len(completions)\n")
    monkeypatch.chdir(tmp_path)
    from grpo_core.rewards.policy import guard_rewards
    from grpo_core.rewards.reward import compose_rewards

    with serving(rewards=["sleepy.py:sleepy"]) as url:
        funcs, _ = compose_rewards([f"remote.server(url={url!r}) within 0.5s"])
        (guarded,) = guard_rewards(funcs, max_share=1.0, log=lambda line: None)
        started = time.monotonic()
        assert guarded(completions=["a", "b"]) == [None, None]
        assert time.monotonic() - started < 4
        assert guarded.timeouts == 2 and guarded.errors == 2


def test_bad_urls_fail_when_the_rewards_are_composed(installed):
    from grpo_core.base.errors import GrpoError
    from grpo_core.rewards.reward import compose_rewards

    with pytest.raises((GrpoError, ValueError), match="url="):
        compose_rewards(["remote.server(url='ftp://x')"])
