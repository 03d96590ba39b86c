"""Benchmark: a judge reward's client with its concurrency against one request at a time.

    python bench/judge.py [--n 512] [--concurrency 8] [--rounds 1] [--model PATH | --url URL]
                          [--fake-latency 0.05] [--max-tokens 4] [--continuous-batching]

``judge.yesno`` scores ``--n`` distinct completions through an OpenAI-compatible server, the
cache off (every question asked), once with ``concurrency=1`` and once with ``--concurrency``,
in each of ``--rounds`` rounds (the ratio is taken within a round: a machine shared with other
work changes speed from one minute to the next; the median is printed).

The server, unless ``--url`` names a running one: ``transformers serve`` on 127.0.0.1 with
``--model`` (a local model folder; default a tiny random model from
``grpo_core.testing.make_tiny_model``, whose answers are unreadable, so the scores are None:
only the requests' cost is measured; ``--continuous-batching`` lets it batch requests). ``--fake-latency S`` measures the client alone too: a
``FakeJudge`` (no model) answering each request after S seconds, as a server with room for
concurrent requests (vLLM, SGLang, a hosted API) does.

Prints, per server, completions/s one at a time and concurrently, the ratio, whether both
passes gave the same scores, and the tokens the server reported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def completions(n: int) -> list[list[dict]]:
    return [[{"role": "assistant", "content": f"Let me add {i} and {i + 1}.\nAnswer: {2 * i + 1}"}] for i in range(n)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: str, log: Path, batching: bool = False) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("transformers", path=str(Path(sys.executable).parent)) or "transformers"
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "serve", model, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                                 "--log-level", "warning", *(["--continuous-batching"] if batching else [])],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"transformers serve did not start:\n{log.read_text()[-2000:]}")


def one_pass(url: str, model: str, items: list, concurrency: int, max_tokens: int) -> tuple[float, list, float]:
    """(seconds, scores, tokens) for the batch scored once."""
    import grpo_core

    spent: dict[str, float] = {}
    func = grpo_core.get_reward("judge.yesno", url=url, model=model, cache="off", recheck=0,
                                concurrency=concurrency, max_tokens=max_tokens, timeout=300.0)
    prompts = [[{"role": "user", "content": "What is the sum?"}]] * len(items)
    start = time.perf_counter()
    values = func(items, prompts=prompts, log_metric=spent.__setitem__)
    return time.perf_counter() - start, values, spent.get("judge.yesno/tokens", 0.0)


def measure(label: str, url: str, model: str, items: list, args) -> None:
    ratios, same = [], True
    for r in range(args.rounds):
        serial, a, tokens = one_pass(url, model, items, 1, args.max_tokens)
        concurrent, b, _ = one_pass(url, model, items, args.concurrency, args.max_tokens)
        same &= a == b
        ratios.append(serial / concurrent)
        print(f"{label} round {r + 1}: one at a time {len(items) / serial:7.1f} completions/s ({serial:.1f}s), "
              f"concurrency {args.concurrency}: {len(items) / concurrent:7.1f} completions/s ({concurrent:.1f}s), "
              f"ratio {serial / concurrent:.2f}; {tokens:.0f} tokens a pass", flush=True)
    print(f"{label}: concurrency {args.concurrency} / one at a time = {statistics.median(ratios):.2f}x "
          f"(median of {len(ratios)}); same scores both ways: {same}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--model", default=None, help="a local model folder for transformers serve")
    parser.add_argument("--url", default=None, help="a running OpenAI-compatible server instead")
    parser.add_argument("--max-tokens", type=int, default=4)
    parser.add_argument("--continuous-batching", action="store_true", help="transformers serve batches requests")
    parser.add_argument("--fake-latency", type=float, default=None, metavar="S")
    args = parser.parse_args(argv)
    os.environ.setdefault("GRPO_PLUGINS", "grpo-rewards-judge")
    items = completions(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        if args.url:
            measure("server", args.url, args.model or "", items, args)
        else:
            model = args.model
            if model is None:
                from grpo_core.testing import make_tiny_model

                model = str(make_tiny_model(Path(tmp) / "tiny-judge"))
            proc, url = start_server(model, Path(tmp) / "serve.log", args.continuous_batching)
            try:
                measure("transformers serve", url, model, items, args)
            finally:
                proc.terminate()
                proc.wait(30)
        if args.fake_latency is not None:
            from grpo_rewards_judge.testing import Answer, FakeJudge

            with FakeJudge(lambda request: Answer(content="yes", delay=args.fake_latency)) as judge:
                measure(f"FakeJudge ({args.fake_latency:g}s a request)", judge.url, "", items, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
