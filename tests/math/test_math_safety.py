"""Untrusted text never runs; the plugin imports fast; scripts without a main
guard neither re-run in the checkers nor hang at exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from grpo_rewards_math import correctness, cosine, exact, numeric

INJECTIONS = [
    "__import__('os').system('touch {m}')",
    r"\boxed{__import__('os').system('touch {m}')}",
    "The answer is __import__('os').system('touch {m}')",
    "<answer>exec(\"open('{m}', 'w').write('x')\")</answer>",
    "Answer: eval(compile('open(\"{m}\",\"w\")', 'x', 'exec'))",
    r"\boxed{\text{__import__('os').system('touch {m}')}}",
    "#### lambda: open('{m}', 'w')",
    r"\boxed{Symbol('x').__class__.__base__.__subclasses__()}",
]


def test_code_injection_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    texts = [t.replace("{m}", str(marker)) for t in INJECTIONS]
    golds = texts[::-1]  # hostile golds too
    for reward in (correctness, cosine, numeric, exact):
        out = (
            reward(texts, golds, workers=2)
            if reward in (correctness, cosine)
            else reward(texts, golds)
        )
        assert len(out) == len(texts)
        assert all(v is None or isinstance(v, float) for v in out)
    out = correctness(texts, ["1"] * len(texts), workers=2)
    assert out == [0.0] * len(texts)
    time.sleep(0.2)
    assert not marker.exists()


def _env(tmp_path):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure imports as installed (with .pyc)
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    env["GRPO_PLUGINS"] = "grpo-rewards-math"
    return env


def test_plugin_module_imports_without_heavy_modules(tmp_path):
    """Importing the plugin (what every listing command does) loads no checker stack;
    how long it takes is bench/cold_start.py's to measure, not a test's."""
    code = textwrap.dedent(
        """
        import sys, time
        import grpo_core  # loaded before any plugin anyway
        t = time.perf_counter()
        import grpo_rewards_math
        took = time.perf_counter() - t
        heavy = [m for m in ("sympy", "math_verify", "pebble", "latex2sympy2_extended",
                             "multiprocessing", "grpo_rewards_math.extract") if m in sys.modules]
        print(took, heavy)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    took, heavy = out.stdout.split(" ", 1)
    assert heavy.strip() == "[]", out.stdout


def test_rewards_list_shows_the_math_rewards(tmp_path):
    """(Its start-up time is measured by bench/cold_start.py, against a bare interpreter.)"""
    cmd = [sys.executable, "-m", "grpo_core", "rewards", "list"]
    out = subprocess.run(cmd, env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "math.correctness" in out.stdout and "math.cosine" in out.stdout


def test_script_without_main_guard_runs_once_and_exits(tmp_path):
    script = tmp_path / "train_like.py"
    script.write_text(
        textwrap.dedent(
            r"""
            import os
            print("START", os.getpid(), flush=True)
            from grpo_rewards_math import correctness
            print(correctness([r"\boxed{\sqrt{8}}", r"\boxed{9^{9^{9^{9}}}}"], [r"2\sqrt{2}", "1"],
                              timeout=1.0, workers=1), flush=True)
            import sys
            print("heavy in caller:", [m for m in ("sympy", "math_verify") if m in sys.modules])
            """
        )
    )
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, str(script)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("START") == 1, out.stdout  # not re-run in the checker processes
    assert "[1.0, 0.0]" in out.stdout
    assert "heavy in caller: []" in out.stdout  # sympy/math-verify stay in the checkers
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert time.monotonic() - start < 60  # and the interpreter exits (no join on live workers)
