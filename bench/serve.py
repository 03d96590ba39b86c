"""Benchmark: the reward server on loopback against in-process scoring of the same batches.

    python bench/serve.py [--batch 512] [--rounds 3] [--requests 40] [--seconds 30] [--workers 2]

``grpo serve --rewards math.correctness:2 format.think_answer_r1`` runs in a subprocess
bound to 127.0.0.1 (the installed plugins, as a user has them). The same batches of
arithmetic completions (the offline ``arithmetic`` dataset, five answer shapes) are scored

- in process: ``Slot.score`` (what the server calls: composed rewards, the training
  guard, ``score_batch``), one batch after another, in the main thread as ``grpo score``;
- through ``POST /score`` by 1, 8 and 64 concurrent clients (threads, one keep-alive
  connection each), ``--requests`` requests or ``--seconds`` per level, whichever first.

Each of ``--rounds`` rounds runs in process and then the three levels; a level's ratio to
in process is taken within its round (a machine shared with other work changes speed
from one minute to the next) and the median over the rounds is reported.

Prints completions/s, p50/p99 latency per request and the ratio of each level's
throughput to in-process, by the clock and by CPU time (the server's and the clients'
CPU seconds, and the server's alone, against the in-process loop's: on a machine other
work keeps busy, more threads get more of the CPUs, and the clock flatters the server;
the clients are this process's threads, a trainer's would run elsewhere), whether every request
was answered 200 with the in-process scores, and the server's RSS after each level (flat:
no growth with the number of requests).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

SPECS = ["math.correctness:2", "format.think_answer_r1"]
SHAPES = ["<think>\nadding\n</think>\n<answer>\n{a}\n</answer>", "Answer: {a}", "I think it is {w}", "{a}",
          "<think>hm</think><answer>{w}</answer>"]


def batches(n_batches: int, size: int) -> list[dict]:
    from grpo_core import load_dataset

    ds = load_dataset("arithmetic", level=2, size=n_batches * size)
    rows = [dict(r, i=i) for i, r in enumerate(ds)]
    out = []
    for b in range(n_batches):
        part = rows[b * size:(b + 1) * size]
        out.append({"completions": [SHAPES[r["i"] % 5].format(a=r["answer"], w=int(float(r["answer"])) + 1)
                                    for r in part],
                    "columns": {"answer": [r["answer"] for r in part]}})
    return out


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def in_process(work: list[dict], requests: int, seconds: float) -> tuple[dict, list]:
    from grpo_core.serve.scoring import RewardSet, Slot

    rewards = RewardSet.from_specs(SPECS)
    slot = Slot(rewards.compose(), rewards.weights)
    slot.score(work[0]["completions"], None, work[0]["columns"])  # warm
    latencies, totals, items = [], [], 0
    started, cpu = time.perf_counter(), time.process_time()
    for k in range(requests):
        batch = work[k % len(work)]
        t = time.perf_counter()
        total = slot.score(batch["completions"], None, batch["columns"])["total"]
        latencies.append(time.perf_counter() - t)
        if k < len(work):
            totals.append(total)
        items += len(batch["completions"])
        if time.perf_counter() - started > seconds:
            break
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"level": "in process", "requests": len(latencies), "ok": len(latencies), "items_s": items / wall,
            "items_cpu_s": items / cpu, "items_server_cpu_s": items / cpu, "p50": percentile(latencies, 0.5),
            "p99": percentile(latencies, 0.99)}, totals


def start_server(port: int, workers: int, queue: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "grpo_core", "serve", "--rewards", *SPECS, "--port", str(port),
           "--workers", str(workers), "--queue", str(queue)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the server did not start: {proc.stderr.read().decode()[-2000:]}")


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time, all its threads."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def clients(port: int, work: list[dict], expected: list, concurrency: int, requests: int, seconds: float,
            server_pid: int | None = None) -> dict:
    bodies = [json.dumps(b).encode() for b in work]
    lock, state = threading.Lock(), {"next": 0, "ok": 0, "wrong": 0, "failed": 0, "items": 0}
    latencies: list[float] = []
    server_cpu = cpu_seconds(server_pid) if server_pid else 0.0
    started, cpu = time.perf_counter(), time.process_time() + server_cpu

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                k = state["next"]
                if k >= requests or time.perf_counter() - started > seconds:
                    return
                state["next"] += 1
            i = k % len(bodies)
            t = time.perf_counter()
            try:
                conn.request("POST", "/score", body=bodies[i], headers={"Content-Type": "application/json"})
                answer = conn.getresponse()
                data = json.loads(answer.read())
                status = answer.status
            except (OSError, http.client.HTTPException, ValueError):
                status, data = 0, None
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            elapsed = time.perf_counter() - t
            with lock:
                latencies.append(elapsed)
                if status != 200:
                    state["failed"] += 1
                elif data["total"] != expected[i % len(expected)]:
                    state["wrong"] += 1
                else:
                    state["ok"] += 1
                    state["items"] += len(work[i]["completions"])

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    server_cpu = (cpu_seconds(server_pid) if server_pid else 0.0) - server_cpu
    cpu = time.process_time() + (cpu_seconds(server_pid) if server_pid else 0.0) - cpu
    return {"level": f"{concurrency} client{'s' if concurrency > 1 else ''}", "requests": len(latencies),
            "ok": state["ok"], "wrong": state["wrong"], "failed": state["failed"], "items_s": state["items"] / wall,
            "items_cpu_s": state["items"] / cpu, "items_server_cpu_s": state["items"] / max(server_cpu, 1e-9),
            "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)}


LEVELS = (1, 8, 64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=512, help="completions per request")
    ap.add_argument("--batches", type=int, default=8, help="distinct batches (requests cycle over them)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of in process and the three levels")
    ap.add_argument("--requests", type=int, default=40, help="requests per level and round (in process too)")
    ap.add_argument("--seconds", type=float, default=30.0, help="time per level and round at most")
    ap.add_argument("--workers", type=int, default=2, help="the server's --workers")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    from grpo_core.serve.server import free_port

    work = batches(args.batches, args.batch)
    port = args.port or free_port()
    proc = start_server(port, args.workers, queue=128)
    memory = [("started", rss_mib(proc.pid))]
    rounds = []
    try:
        _, expected = in_process(work, len(work), args.seconds)
        clients(port, work, expected, 4, 2 * len(work), args.seconds)  # warm the server: every batch seen
        memory.append(("warm", rss_mib(proc.pid)))
        for k in range(args.rounds):
            rounds.append([in_process(work, args.requests, args.seconds)[0]]
                          + [clients(port, work, expected, c, args.requests, args.seconds, proc.pid) for c in LEVELS])
            memory.append((f"round {k + 1}", rss_mib(proc.pid)))
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    report(args, rounds, memory, code)
    return 0 if all(r.get("failed", 0) == 0 and r.get("wrong", 0) == 0 for rs in rounds for r in rs) else 1


def median(values: list[float]) -> float:
    return percentile(values, 0.5)


def report(args, rounds: list[list[dict]], memory: list, code: int) -> None:
    print(f"grpo serve on 127.0.0.1 (--workers {args.workers}), {args.batch} completions per request, "
          f"rewards {' + '.join(SPECS)}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"medians of {len(rounds)} rounds")
    print(f"{'':>12}  {'requests':>8}  {'answered ok':>11}  {'completions/s':>13}  {'p50 ms':>8}  {'p99 ms':>8}  "
          f"{'vs in process':>13}  {'CPU: all':>8}  {'server':>6}")
    for i, level in enumerate(r["level"] for r in rounds[0]):
        rows = [rs[i] for rs in rounds]
        clock, cpu, server = (median([rs[i][key] / rs[0][key] for rs in rounds])
                              for key in ("items_s", "items_cpu_s", "items_server_cpu_s"))
        print(f"{level:>12}  {sum(r['requests'] for r in rows):>8}  {sum(r['ok'] for r in rows):>11}  "
              f"{median([r['items_s'] for r in rows]):>13.0f}  {median([r['p50'] for r in rows]) * 1e3:>8.1f}  "
              f"{median([r['p99'] for r in rows]) * 1e3:>8.1f}  {clock:>12.2f}x  {cpu:>7.2f}x  {server:>5.2f}x")
    print("by round, vs in process (clock / CPU): " + "; ".join(
        ", ".join(f"{r['items_s'] / rs[0]['items_s']:.2f}/{r['items_cpu_s'] / rs[0]['items_cpu_s']:.2f}"
                  for r in rs[1:]) for rs in rounds))
    print("server RSS MiB: " + ", ".join(f"{name} {mib:.1f}" for name, mib in memory)
          + f" (after warm-up {memory[-1][1] - memory[1][1]:+.1f})")
    print(f"SIGTERM: the server exited with {code}")


if __name__ == "__main__":
    sys.exit(main())
