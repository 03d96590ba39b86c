"""grpo view's curves and settings: every figure metrics.jsonl holds drawn (TRL's loss, KL,
entropy, gradient norm, lengths, clip ratio, learning rate; a reward's own figures), the
run's config on a page, up to four runs compared on any figure with the settings that
differ; and the SVG itself (round ticks, text escaped, points where the values are)."""

from __future__ import annotations

import re
from html import unescape

from grpo_core.view.charts import MAX_LINES, charts, families
from grpo_core.view.svg import line_chart, nice_ticks, tick_text

from .conftest import make_run
from .test_view_pages import get


def chart(html: str, key: str) -> str:
    """The SVG of the chart ``key`` on a page."""
    return html.split(f'id="chart-{key}">')[1].split("</svg>")[0]


def points(svg: str) -> list[str]:
    """The tooltips of a chart's dots: 'LABEL: step S, VALUE'."""
    return re.findall(r"<circle [^>]*><title>([^<]*)</title>", svg)


def test_every_logged_figure_is_drawn_on_the_run_page(serve_runs, tmp_path):
    url = serve_runs(make_run(tmp_path / "run"))
    code, html = get(f"{url}/run/0")
    assert code == 200
    # make_run logs loss 0.1 x step, kl 0.01 x step, entropy 1.5 - 0.1 x step, learning_rate 1e-5 x step
    assert points(chart(html, "loss")) == ["loss: step 1, 0.1", "loss: step 2, 0.2", "loss: step 3, 0.3"]
    assert points(chart(html, "kl")) == ["KL: step 1, 0.01", "KL: step 2, 0.02", "KL: step 3, 0.03"]
    assert points(chart(html, "entropy")) == ["entropy: step 1, 1.4", "entropy: step 2, 1.3", "entropy: step 3, 1.2"]
    assert points(chart(html, "learning_rate"))[2] == "learning rate: step 3, 3e-05"
    assert points(chart(html, "grad_norm")) == [f"gradient norm: step {s}, 0.3" for s in (1, 2, 3)]
    # mean tokens: the completions' characters, (18 + 1 + 5 + 18 + 1 + 0) / 6 = 7.17 at step 1
    assert points(chart(html, "lengths"))[0] == "mean: step 1, 7.167"
    assert points(chart(html, "clip_ratio")) == [f"region (mean): step {s}, 0" for s in (1, 2, 3)]
    # a figure no panel knows (a reward's own) is drawn too, under its family's name
    assert points(chart(html, "figure-toy.right")) == [f"no_answer: step {s}, 0" for s in (1, 2, 3)]
    # the rewards: the total and each reward's mean; step 1's total (2.5 + 2 + 0 + 0.5 + 0 + 0) / 6
    assert points(chart(html, "rewards"))[0] == "total: step 1, 0.8333"
    assert [p.split(":")[0] for p in points(chart(html, "rewards"))[3::3]] == ["toy.right", "toy.format"]


def test_the_config_page_shows_config_yaml_as_written(serve_runs, tmp_path):
    run = make_run(tmp_path / "run")
    (run / "config.yaml").write_text("# resolved\nrewards:\n- toy.right:2.0\nlora: {r: 16}\nmodel: {id: '<tiny>'}\n")
    url = serve_runs(run)
    code, html = get(f"{url}/run/0")
    assert '<a href="/run/0/config">config</a>' in html
    code, html = get(f"{url}/run/0/config")
    assert code == 200
    assert '<pre class="config"># resolved\nrewards:\n- toy.right:2.0\nlora: {r: 16}\nmodel: {id: &#39;&lt;tiny&gt;&#39;}\n</pre>' \
        in html


def test_four_runs_compare_on_any_figure_with_the_settings_that_differ(serve_runs, tmp_path):
    dirs = [make_run(tmp_path / name, steps=steps) for name, steps in
            [("a", (1, 2, 3)), ("b", (1, 2)), ("c", (1,)), ("d", (1, 2, 3))]]
    (dirs[3] / "config.yaml").write_text("rewards:\n- toy.right:1.0\n- toy.format:0.5\nmax_steps: 3\nlora: {r: 8}\n")
    url = serve_runs(*dirs)
    code, html = get(f"{url}/compare?a=0&b=1&c=2&d=3&figure=kl")
    assert code == 200 and html.count('id="side-') == 4
    kl = chart(html, "figure-kl")
    # one line per run, labelled by the run: a and d logged 3 steps, b 2, c 1
    assert kl.count("<polyline") == 4
    assert [p for p in points(kl) if p.endswith(", 0.03")] == ["a: step 3, 0.03", "d: step 3, 0.03"]
    assert sum(p.startswith("c: ") for p in points(kl)) == 1
    # the figure asked for comes first, then the panels' headlines: one line a run
    keys = re.findall(r'<div class="chart" id="chart-([^"]+)">', html)
    assert keys[:3] == ["figure-kl", "rewards", "accuracy"] and "kl" not in keys  # KL once, as asked
    assert chart(html, "rewards").count("<polyline") == 4
    # settings: max_steps 3 / 2 / 1 / 3, lora.r only in d, the first reward's weight in d
    rows = re.findall(r"<tr><td>([^<]*)</td>((?:<td class=\"text\">[^<]*</td>)+)</tr>", html.split('id="settings"')[1])
    table = {key: re.findall(r'<td class="text">([^<]*)</td>', cells) for key, cells in rows}
    assert table == {"lora.r": ["(not set)", "(not set)", "(not set)", "8"], "max_steps": ["3", "2", "1", "3"],
                     "rewards": ['[&#34;toy.right:2.0&#34;, &#34;toy.format:0.5&#34;]'] * 3
                     + ['[&#34;toy.right:1.0&#34;, &#34;toy.format:0.5&#34;]']}
    assert "3 settings differ; 0 are the same in every run." in html
    # the figure chooser offers every logged figure and keeps the runs
    chooser = html.split('name="figure"')[1].split("</select>")[0]
    assert '<option value="toy.right/no_answer" >' in chooser and '<option value="kl" selected>' in chooser
    for side, index in zip("abcd", "0123"):
        assert f'<input type="hidden" name="{side}" value="{index}">' in html
    # a fifth run is not a side (e= is not read)
    assert get(f"{url}/compare?a=0&b=1&e=2")[1].count('id="side-') == 2


def test_panels_group_every_key_and_bound_their_lines():
    keys = ["reward", "rewards/x/mean", "rewards/x/std", "rewards/x/errors", "rewards/y/errors", "loss",
            "sampling/all_rounds/rewards/x/mean", "sampling/rounds", "sampling/groups_dropped", "my_plugin_figure"]
    panels = {key: [m for m, _ in lines] for key, _, _, lines in families(keys)}
    assert panels == {"rewards": ["reward", "rewards/x/mean"], "loss": ["loss"],
                      "spread": ["rewards/x/std"], "figure-rewards___errors": ["rewards/x/errors", "rewards/y/errors"],
                      "figure-sampling_all_rounds_rewards___mean": ["sampling/all_rounds/rewards/x/mean"],
                      "figure-sampling": ["sampling/rounds", "sampling/groups_dropped"],
                      "figure-my_plugin_figure": ["my_plugin_figure"]}
    # a family of 20 rewards' errors: the first MAX_LINES lines, and the title says so
    rows = [{"step": s, "reward": 1.0, **{f"rewards/r{i}/errors": 0.0 for i in range(20)}} for s in (1, 2)]
    errors = next(c for c in charts([("run", rows)]) if c.key == "figure-rewards___errors")
    assert errors.svg.count("<polyline") == MAX_LINES == 12
    assert f"rewards/*/errors (the first {MAX_LINES} of 20 lines)" in errors.title
    # steps, times and non-numbers are not figures; NaN and infinities are left out of a line
    rows = [{"step": 1, "stage_step": 1, "time": 9.0, "reward": float("nan"), "stage": "main", "loss": 1.0},
            {"step": 2, "stage_step": 2, "time": 9.5, "reward": 0.5, "stage": "main", "loss": float("inf")}]
    drawn = {c.key: points(c.svg) for c in charts([("run", rows)])}
    assert drawn == {"rewards": ["total: step 2, 0.5"], "loss": ["loss: step 1, 1"]}


def test_the_svg_has_round_ticks_and_escaped_text():
    assert nice_ticks(-0.93, 0.42, 5) == [-0.75, -0.5, -0.25, 0.0, 0.25]
    assert nice_ticks(1, 10_000, 7, integer=True) == [2000, 4000, 6000, 8000, 10000]
    assert nice_ticks(1, 4, 7, integer=True) == [1, 2, 3, 4]
    ticks = nice_ticks(0.2, 0.38, 5)
    assert [tick_text(t, ticks) for t in ticks] == ["0.20", "0.25", "0.30", "0.35"]
    ticks = nice_ticks(5e-7, 2e-6, 5)
    assert [tick_text(t, ticks) for t in ticks] == ["5e-07", "1e-06", "1.5e-06", "2e-06"]
    svg = line_chart("</svg><script>", "y & z", [("<b>run</b>", [1.0, 2.0], [0.0, 1.0])])
    assert "<script>" not in svg and "<b>" not in svg and "&lt;/svg&gt;&lt;script&gt;" in svg and "y &amp; z" in svg
    assert unescape(points(svg)[1]) == "<b>run</b>: step 2, 1"
    # the dots sit where the values are: x from 58 to 448 (460 wide less the margins), y 1.0 at the top (24 + 5%)
    dots = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)
    assert dots == [("58.0", str(round(24 + 170 - 170 * 0.05 / 1.1, 1))), ("448.0", str(round(24 + 170 * 0.05 / 1.1, 1)))]


def test_a_prompt_samplers_figures_have_their_panels():
    """sampling.prompts: frontier logs prompts/*: the pass rates and the flat share on one
    panel (shares, 0 to 1), the knob's difficulty on its own (1 to 5: another scale); a
    plugin sampler's other prompts/* figures still drawn, as their family."""
    keys = ["loss", "prompts/expected_pass", "prompts/observed_pass", "prompts/flat_share", "prompts/difficulty",
            "prompts/acme_rows"]
    panels = {key: [m for m, _ in lines] for key, _, _, lines in families(keys)}
    assert panels == {"loss": ["loss"],
                      "prompts": ["prompts/observed_pass", "prompts/expected_pass", "prompts/flat_share"],
                      "difficulty": ["prompts/difficulty"], "figure-prompts": ["prompts/acme_rows"]}
    rows = [{"step": s, "prompts/difficulty": d, "prompts/observed_pass": o} for s, d, o in ((1, 1.0, 1.0),
                                                                                               (2, 1.76, 0.75))]
    drawn = {c.key: points(c.svg) for c in charts([("run", rows)])}
    assert drawn == {"prompts": ["observed pass rate: step 1, 1", "observed pass rate: step 2, 0.75"],
                     "difficulty": ["difficulty: step 1, 1", "difficulty: step 2, 1.76"]}
