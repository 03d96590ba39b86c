"""grpo view in a real browser: Debian's headless Chromium driven by Playwright (nothing
downloaded; scripts/setup.sh installs the package). A person's path through the hand-made run
(tests/view/conftest.py): open it, see the curves, filter the rollouts by a reward range and
by suspect, open a group, compare two steps. A screenshot of each page is kept in the test's
tmp_path (GRPO_VIEW_SHOTS=DIR keeps a copy there too)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .conftest import make_run

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed "
                                 "(scripts/setup.sh installs it where it can: apt-get install chromium)")]


@pytest.fixture
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=60_000)
        try:
            yield b
        finally:
            b.close()


def test_a_person_reads_a_run_in_the_browser(serve_runs, browser, tmp_path):
    url = serve_runs(make_run(tmp_path / "run"), make_run(tmp_path / "shorter", steps=(1, 2)))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(20_000)
    shots = []

    def shot(name: str) -> None:
        path = tmp_path / f"{len(shots) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        shots.append(path)

    # the runs, then one: its curves (rewards, held-out accuracy, tokens) and its health event
    page.goto(url + "/")
    assert page.locator("table tr").count() == 3  # a header and two runs
    shot("runs")
    page.get_by_role("link", name="run", exact=True).click()
    page.wait_for_url(url + "/run/0")
    for chart in ("rewards", "accuracy", "tokens"):
        box = page.locator(f"#chart-{chart} svg").bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100, chart
    assert page.locator("#chart-accuracy").inner_text().count("held-out accuracy") >= 1
    assert "mean reward moved by 0.01 over 3 steps" in page.locator("table").last.inner_text()
    shot("run")

    # the rollouts filtered by a reward range: total in [2, 2.5] (4 groups, 9 completions)
    form = page.locator("form.filters").first
    form.locator("input[name=low]").fill("2")
    form.locator("input[name=high]").fill("2.5")
    form.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/run/0/rollouts?**")
    assert page.locator("#summary").inner_text() == "4 groups match (9 completions) in all steps"
    assert page.locator("section.group").count() == 4 and page.locator("tr.match").count() == 9
    shot("range")

    # by suspect alone: the two completions paid best in their group while toy.right says wrong
    form = page.locator("form.filters").first
    form.locator("input[name=low]").fill("")
    form.locator("input[name=high]").fill("")
    form.locator("input[name=suspect]").check()
    form.get_by_role("button", name="Filter").click()
    page.wait_for_url("**suspect=on**")
    assert page.locator("#summary").inner_text() == "2 groups match (2 completions) in all steps"
    cards = page.locator("section.group")
    assert [cards.nth(i).get_attribute("id") for i in range(2)] == ["step1-round0-group1", "step3-round0-group0"]
    assert page.locator("tr.match td.text").all_inner_texts() == ["<answer>4</answer>", "<answer>7</answer>"]
    shot("suspect")

    # open a group: its own page (a link to share), every completion whole
    cards.nth(1).get_by_role("link").first.click()
    page.wait_for_url(url + "/run/0/step/3/group/0")
    assert page.locator("td.text").all_inner_texts()[:3] == ["<answer>7</answer>", "7", "7"]
    assert "round 0" in page.locator("section.group h3").inner_text()
    shot("group")

    # compare two steps of the run: step 1 and step 3 side by side
    page.goto(url + "/run/0")
    compare = page.locator("form", has=page.locator("input[name=a_step]"))
    compare.locator("input[name=a_step]").fill("1")
    compare.locator("input[name=b_step]").fill("3")
    compare.get_by_role("button", name="Compare").click()
    page.wait_for_url("**/compare?**")
    sides = page.locator("div.side")
    assert sides.count() == 2
    assert "step 1" in sides.nth(0).locator("h2").inner_text() and "step 3" in sides.nth(1).locator("h2").inner_text()
    # mean totals by hand: (2.5 + 2 + 0 + 0.5 + 0 + 0) / 6 and (0.5 + 0 + 0 + 2.5 + 2.5 + 0) / 6
    assert "mean total\t0.833" in sides.nth(0).locator("table").first.inner_text()
    assert "mean total\t0.917" in sides.nth(1).locator("table").first.inner_text()
    shot("compare-steps")

    # and two runs: their curves overlaid (a line a run), the settings that differ, then one figure chosen
    page.goto(url + "/")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url("**/compare?a=0&b=1**")
    legend = page.locator("#chart-rewards svg > text").all_text_contents()
    assert "run" in legend and "shorter" in legend
    # config.yaml differs in max_steps only (3 and 2): the other settings are the same
    assert page.locator("#settings tr").all_inner_texts() == ["setting (config.yaml)\trun\tshorter",
                                                             "max_steps\t3\t2"]
    form = page.locator("form", has=page.locator("select[name=figure]"))
    form.locator("select[name=figure]").select_option("kl")
    form.get_by_role("button", name="Draw").click()
    page.wait_for_url("**figure=kl**")
    assert page.locator("#chart-figure-kl svg > title").text_content() == "kl"
    shot("compare-runs")

    keep = os.environ.get("GRPO_VIEW_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for path in shots:
            shutil.copy(path, Path(keep) / path.name)
    assert all(p.stat().st_size > 10_000 for p in shots)


def test_bad_runs_in_the_browser(serve_runs, browser, tmp_path):
    cut = make_run(tmp_path / "cut", finished=False)
    (cut / "rollouts" / "step-000002.parquet").write_bytes(b"PAR1 not really parquet")
    url = serve_runs(tmp_path / "missing", cut)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(20_000)
    page.goto(url + "/run/0")
    assert "does not exist" in page.locator("div.problem").first.inner_text()
    page.screenshot(path=str(tmp_path / "missing.png"), full_page=True)
    page.goto(url + "/run/1/rollouts")
    assert "step-000002.parquet cannot be read" in page.locator("div.problem").first.inner_text()
    assert page.locator("section.group").count() == 4  # steps 1 and 3 still shown
    page.screenshot(path=str(tmp_path / "damaged.png"), full_page=True)
    keep = os.environ.get("GRPO_VIEW_SHOTS")
    if keep:
        for name in ("missing.png", "damaged.png"):
            shutil.copy(tmp_path / name, Path(keep) / name)
