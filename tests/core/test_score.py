"""`grpo score`: per-reward statistics, per-line output and zero-spread groups,
checked against values worked out by hand."""

from __future__ import annotations

import csv
import json
import types

import pytest

import grpo_core
from grpo_core.cli import main


def chars(completions, **kwargs):
    return [float(len(grpo_core.completion_text(c))) for c in completions]


def matches(completions, answer, **kwargs):
    # None when the gold is empty: "no opinion"
    return [None if not a else float(grpo_core.completion_text(c) == a) for c, a in zip(completions, answer)]


@pytest.fixture
def toy(register_plugin):
    mod = types.ModuleType("score_toy")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("toy.chars", chars)
        register("toy.match", matches)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="toy")


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ROWS = [
    {"completion": "ab", "answer": "ab"},                                    # chars 2, match 1
    {"completion": [{"role": "assistant", "content": "abcd"}], "answer": "x"},  # chars 4, match 0
    {"completion": "", "answer": ""},                                         # chars 0, match None
    {"completion": "abcdef", "answer": "abcdef"},                            # chars 6, match 1
]


def test_summary_statistics(toy, tmp_path, capsys):
    src = write_jsonl(tmp_path / "c.jsonl", ROWS)
    assert main(["score", "--rewards", "toy.chars:0.5", "toy.match:2", "--input", str(src),
                 "--json", "--group-size", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    ch, m = out["rewards"]
    # chars: 2, 4, 0, 6 -> mean 3, population std sqrt(5), one zero
    assert ch["mean"] == 3.0 and ch["std"] == pytest.approx(5 ** 0.5)
    assert (ch["min"], ch["max"], ch["zero_share"], ch["none_share"]) == (0.0, 6.0, 0.25, 0.0)
    # match: 1, 0, None, 1 -> mean over scored 2/3; None share 1/4; zero share 1/4
    assert m["mean"] == pytest.approx(2 / 3)
    assert (m["none_share"], m["zero_share"]) == (0.25, 0.25)
    # totals: 0.5*2+2*1=3, 0.5*4+0=2, 0+None->0, 0.5*6+2=5 ; groups (3,2) and (0,5): none flat
    assert out["total"]["mean"] == pytest.approx(2.5)
    assert out["groups"] == {"size": 2, "count": 2, "zero_spread": 0, "zero_spread_share": 0.0,
                             "incomplete_lines": 0}


def test_zero_spread_groups_are_counted(toy, tmp_path, capsys):
    rows = [{"completion": "aa", "answer": "a"}, {"completion": "bb", "answer": "b"},   # 2, 2 -> flat
            {"completion": "c", "answer": "c"}, {"completion": "dd", "answer": "d"},    # 1, 2 -> spread
            {"completion": "e", "answer": "e"}]                                        # leftover
    src = write_jsonl(tmp_path / "c.jsonl", rows)
    assert main(["score", "--rewards", "toy.chars", "--input", str(src), "--group-size", "2"]) == 0
    text = capsys.readouterr().out
    assert "groups of 2: 1/2 (50.0%) have zero spread" in text
    assert "1 trailing lines do not fill a group" in text


def test_per_line_output_jsonl_and_csv(toy, tmp_path):
    src = write_jsonl(tmp_path / "c.jsonl", ROWS)
    assert main(["score", "--rewards", "toy.chars", "toy.match", "--input", str(src),
                 "--output", str(tmp_path / "s.jsonl")]) == 0
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert lines[2] == {"line": 3, "toy.chars": 0.0, "toy.match": None, "total": 0.0}
    assert main(["score", "--rewards", "toy.match", "--input", str(src), "--output", str(tmp_path / "s.csv")]) == 0
    table = list(csv.reader((tmp_path / "s.csv").open()))
    assert table[0] == ["line", "toy.match", "total"]
    assert table[1:] == [["1", "1.0", "1.0"], ["2", "0.0", "0.0"], ["3", "", "0.0"], ["4", "1.0", "1.0"]]


def test_missing_column_is_a_clear_error(toy, tmp_path, capsys):
    src = write_jsonl(tmp_path / "c.jsonl", [{"completion": "a", "answer": "a"}, {"completion": "b"}])
    assert main(["score", "--rewards", "toy.match", "--input", str(src)]) == 2
    err = capsys.readouterr().err
    assert "reward 'toy.match' needs the column 'answer'" in err
    assert "line 2 has only: completion" in err


def test_bad_lines_are_clear_errors(toy, tmp_path, capsys):
    src = tmp_path / "c.jsonl"
    src.write_text('{"completion": "a"}\nnot json\n')
    assert main(["score", "--rewards", "toy.chars", "--input", str(src)]) == 2
    assert "c.jsonl:2 is not valid JSON" in capsys.readouterr().err
    src.write_text('{"text": "a"}\n')
    assert main(["score", "--rewards", "toy.chars", "--input", str(src)]) == 2
    assert "c.jsonl:1 has no 'completion' field" in capsys.readouterr().err
    assert main(["score", "--rewards", "toy.chars", "--input", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("column", ["log_metric", "trainer_state", "log_extra", "completions", "group_size"])
def test_a_column_named_as_a_keyword_rewards_are_given_is_refused_by_name(toy, tmp_path, capsys, column):
    # TRL gives every reward log_metric=, trainer_state=, log_extra=...: a column of that name made
    # the call fail ("got multiple values for keyword argument"), a traceback
    src = write_jsonl(tmp_path / "c.jsonl", [{"completion": "a", "answer": "a"}, {"completion": "b", "answer": "b",
                                                                                     column: 1}])
    assert main(["score", "--rewards", "toy.chars", "--input", str(src)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"Error: {src}:2: column '{column}' has the name of a keyword every reward is given by "
                          f"TRL or grpo") and f"rename the column (e.g. '{column}_value')" in err, err


def test_a_whole_number_too_long_to_read_is_refused_by_line(toy, tmp_path, capsys):
    src = tmp_path / "c.jsonl"
    src.write_text('{"completion": "a", "answer": 1}\n{"completion": "b", "answer": ' + "7" * 4301 + '}\n')
    assert main(["score", "--rewards", "toy.chars", "--input", str(src)]) == 2
    err = capsys.readouterr().err
    assert err == (f"Error: {src}:2 holds a whole number of 4,301 digits (777777777777...), longer than the 4,300 "
                   f"digits Python reads: send it as a string (in quotes) or shorter.\n")
    src.write_text('{"completion": "b", "answer": ' + "7" * 4300 + '}\n')  # at the limit: read and scored
    assert main(["score", "--rewards", "toy.chars", "--input", str(src), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rewards"][0]["mean"] == 1.0


# ------------------------------------------------------------------ --against


GROUPS = [  # (prompt, completion, answer): toy.chars / toy.match per row
    ("p1", "ab", "ab"), ("p1", "abcd", "x"),   # chars 2, 4   match 1, 0: best flips, both advantages flip
    ("p2", "x", "x"), ("p2", "yyy", "q"),      # chars 1, 3   match 1, 0: the same
    ("p3", "zz", "zz"), ("p3", "z", "q"),      # chars 2, 1   match 1, 0: agree
    ("p4", "aaaa", "b"), ("p4", "c", "d"),     # chars 4, 1   match 0, 0: flat under match, no best to change
]


def group_rows():
    return [{"prompt": p, "completion": c, "answer": a} for p, c, a in GROUPS]


def test_against_reports_best_changes_advantage_flips_and_most_moved_rows(toy, tmp_path, capsys):
    src = write_jsonl(tmp_path / "c.jsonl", group_rows())
    assert main(["score", "--rewards", "toy.chars", "--against", "toy.match", "--input", str(src), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total"]["mean"] == 18 / 8 and out["against"]["total"]["mean"] == 3 / 8
    c = out["comparison"]
    assert (c["groups"], c["best_changed"], c["best_changed_share"]) == (4, 2, 0.5)
    assert (c["completions"], c["advantage_flipped"], c["advantage_flipped_share"]) == (8, 4, 0.5)
    # a group of two: (r - mean) / (unbiased std + 1e-4) = +-0.5 * d / (d / sqrt 2 + 1e-4)
    half = lambda d: 0.5 * d / (d / 2 ** 0.5 + 1e-4)  # noqa: E731
    moved = c["most_different"]
    assert [r["line"] for r in moved[:4]] == [1, 2, 3, 4]  # equal moves, in row order
    assert moved[0]["advantage"] == pytest.approx(-half(2)) and moved[0]["against_advantage"] == pytest.approx(half(1))
    assert moved[0]["moved"] == pytest.approx(half(2) + half(1))
    assert moved[4]["line"] == 7 and moved[4]["moved"] == pytest.approx(half(3))  # match is flat there: 0
    assert moved[0]["completion"] == "ab"


def test_against_groups_by_size_as_by_prompt_and_prints_a_table(toy, tmp_path, capsys):
    src = write_jsonl(tmp_path / "c.jsonl", [{k: v for k, v in r.items() if k != "prompt"} for r in group_rows()])
    assert main(["score", "--rewards", "toy.chars", "--against", "toy.match:2", "--input", str(src),
                 "--group-size", "2"]) == 0
    text = capsys.readouterr().out
    assert "best completion changes in 2/4 groups (50.0%)" in text
    assert "advantage changes sign for 4/8 completions (50.0%)" in text
    assert "rows whose advantage moves most" in text


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_csv_and_parquet_inputs_score_like_jsonl(toy, tmp_path, capsys, fmt):
    rows = group_rows()
    path = tmp_path / f"c.{fmt}"
    if fmt == "csv":
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["prompt", "completion", "answer"])
            w.writeheader()
            w.writerows(rows)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    assert main(["score", "--rewards", "toy.chars", "--against", "toy.match", "--input", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lines"] == 8 and out["total"]["mean"] == 18 / 8
    assert out["comparison"]["best_changed"] == 2 and out["comparison"]["advantage_flipped"] == 4


def test_per_line_output_carries_what_rewards_log(register_plugin, tmp_path):
    def first_word(completions, log_extra=None, **kwargs):
        words = [(grpo_core.completion_text(c).split() or [""])[0] for c in completions]
        log_extra("toy.first/answer", words)
        return [float(w == "yes") for w in words]

    mod = types.ModuleType("logging_toy")
    mod.register_rewards = grpo_core.hookimpl(lambda register: register("toy.first", first_word))
    register_plugin(mod, name="logging_toy")
    src = write_jsonl(tmp_path / "c.jsonl", [{"completion": "yes sir"}, {"completion": "no way"}])
    assert main(["score", "--rewards", "toy.first", "--against", "toy.first:2", "--input", str(src),
                 "--output", str(tmp_path / "s.csv")]) == 0
    table = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert table[0] == {"line": "1", "toy.first": "1.0", "total": "1.0", "toy.first/answer": "yes",
                        "against/toy.first": "1.0", "against/total": "2.0", "against/toy.first/answer": "yes"}
    assert table[1]["toy.first/answer"] == "no" and table[1]["against/total"] == "0.0"
