"""Benchmark: a cold `grpo serve` whose requests need the math checker (sympy in worker processes).

    python bench/serve_checks.py [--successive 8] [--threads 4] [--requests 8] [--burners 2]

Two measurements, each against a fresh server (a subprocess, the installed plugins,
``math.correctness:2 format.think_answer_r1``):

1. ``--successive`` requests one after another, each with a pair the checker has not
   seen (``\\frac{a}{b}`` against a decimal): the latency of each, and the processes the
   server started (sampled every 5 ms from /proc): the checker pool is started once, so
   after the first request none should be. The baseline is the same kind of new checks
   scored in this process (``Slot.score``, as ``grpo score`` does), one after another.
2. The same server kind, cold, under ``--threads`` threads of ``--requests`` requests
   each (16 completions a request, 4 of them new checks) while ``--burners`` other
   processes keep the CPUs busy: every score is compared with what ``grpo score``'s
   scoring gives in process; then, with the burners stopped, every request is sent
   again: a check that ran out of time under load must now score right (a time-out is
   not remembered as an answer).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time

SPECS = ["math.correctness:2", "format.think_answer_r1"]
SHAPES = ["<think>\nadding\n</think>\n<answer>\n{a}\n</answer>", "Answer: {a}", "I think it is {w}", "{a}"]


def descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = set(), [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


class Server:
    """``grpo serve`` in a subprocess, and every process it started (sampled)."""

    def __init__(self):
        from grpo_core.serve.server import free_port

        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "grpo_core", "serve", "--rewards", *SPECS,
                                      "--port", str(self.port), "--workers", "4"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.seen: set[int] = set()
        self.stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()
        deadline = time.monotonic() + 120
        while not self._healthy():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.proc.kill()
                raise SystemExit(f"the server did not start: {self.proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)

    def _sample(self) -> None:
        while not self.stop.is_set():
            self.seen |= descendants(self.proc.pid)
            time.sleep(0.005)

    def _healthy(self) -> bool:
        try:
            return self.post("/health", None)[0] == 200
        except OSError:
            return False

    def post(self, path: str, body: dict | None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            if body is None:
                conn.request("GET", path)
            else:
                conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            answer = conn.getresponse()
            return answer.status, json.loads(answer.read())
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.proc.terminate()
        self.proc.wait(timeout=60)


def new_checks(start: int, n: int) -> list[tuple[str, str]]:
    """(completion, gold) pairs only the checker decides: a fraction against a decimal
    (odd numerators over 8 or 16: never whole, exact in binary)."""
    out = []
    for k in range(start, start + n):
        num, den = 2 * k + 1, 8 if k % 2 else 16
        out.append((f"<think>\ndividing\n</think>\n<answer>\n\\frac{{{num}}}{{{den}}}\n</answer>", str(num / den)))
    return out


def request(seed: int) -> dict:
    """16 completions: 4 new checks, 12 plain arithmetic answers (right and wrong)."""
    pairs = new_checks(1000 + 4 * seed, 4)
    for i in range(12):
        a = 3 * seed + i
        pairs.append((SHAPES[i % 4].format(a=a, w=a + 1), str(a)))
    return {"completions": [c for c, _ in pairs], "columns": {"answer": [g for _, g in pairs]}}


def in_process(bodies: list[dict]) -> tuple[list[list[float]], list[float]]:
    """What grpo score's scoring gives for each request, and the seconds each took."""
    from grpo_core.serve.scoring import RewardSet, Slot

    rewards = RewardSet.from_specs(SPECS)
    slot = Slot(rewards.compose(), rewards.weights)
    totals, seconds = [], []
    for body in bodies:
        t = time.perf_counter()
        totals.append(slot.score(body["completions"], None, body["columns"])["total"])
        seconds.append(time.perf_counter() - t)
    return totals, seconds


def median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2


def successive(n: int) -> None:
    bodies = [{"completions": [c], "columns": {"answer": [g]}} for c, g in new_checks(5000, n)]
    expected, base = in_process(bodies)  # this process's checker pool and cache, not the server's
    server = Server()
    try:
        latencies, counts, wrong = [], [], 0
        for body, total in zip(bodies, expected):
            t = time.perf_counter()
            status, got = server.post("/score", body)
            latencies.append(time.perf_counter() - t)
            time.sleep(0.2)  # a checker pool that died with the request is gone by now
            counts.append(len(server.seen))
            wrong += status != 200 or got["total"] != total
        # a check stuck in sympy (a power tower against an expression gold) costs its own limit
        # (math.correctness: 5 s) and its worker, replaced from the warm forkserver; the next
        # request with a new check is as quick as before
        t = time.perf_counter()
        status, got = server.post("/score", {"completions": [r"\boxed{9^{9^{9^{9}}}}"], "columns": {"answer": [r"\sqrt{4}"]}})
        stuck = time.perf_counter() - t
        timeouts = got.get("metrics", {}).get("math.correctness/timeouts", [0.0])
        before = len(server.seen)
        (c, g), = new_checks(9000, 1)
        t = time.perf_counter()
        status2, got2 = server.post("/score", {"completions": [c], "columns": {"answer": [g]}})
        after_stuck = time.perf_counter() - t
        time.sleep(0.2)
    finally:
        server.close()
    print(f"{n} successive requests, each with a new check (cold server):")
    print("  ms per request: " + ", ".join(f"{s * 1e3:.0f}" for s in latencies)
          + f"; median {median(latencies) * 1e3:.1f} ms (in process, new checks one after another: median "
          f"{median(base) * 1e3:.1f} ms, first {base[0] * 1e3:.0f} ms; ratio {median(latencies) / median(base):.2f}x)")
    print(f"  processes the server had started: {', '.join(map(str, counts))} -> {counts[-1] - counts[0]} new after "
          f"the first request; answers that differ from in process: {wrong} (right answers: "
          f"{sum(t == [3.0] for t in expected)} of {n})")
    print(f"  a stuck check: {stuck:.1f} s (math.correctness's limit: 5 s), total {got['total']}, time-outs "
          f"{timeouts}; the next request with a new check: {after_stuck * 1e3:.0f} ms, total {got2['total']}, "
          f"{len(server.seen) - before} process started (the killed checker's replacement)")


def busy(threads: int, requests: int, burners: int) -> None:
    bodies = [request(i) for i in range(threads * requests)]
    expected, _ = in_process(bodies)
    burn = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)]
    results: list = [None] * len(bodies)
    try:
        server = Server()
        started = time.perf_counter()

        def client(t: int) -> None:
            for k in range(t, len(bodies), threads):
                results[k] = server.post("/score", bodies[k])

        pool = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        loaded = time.perf_counter() - started
    finally:
        for p in burn:
            p.kill()
            p.wait()
    try:
        again = [server.post("/score", b) for b in bodies]
    finally:
        server.close()
    differ = sum(s != 200 or g["total"] != e for (s, g), e in zip(results, expected))
    items = sum(sum(a != b for a, b in zip(g["total"], e)) for (_, g), e in zip(results, expected))
    timeouts = sum(sum(g.get("metrics", {}).get("math.correctness/timeouts", [0.0])) for _, g in results)
    after = sum(s != 200 or g["total"] != e for (s, g), e in zip(again, expected))
    print(f"cold server, {threads} threads x {requests} requests of 16 completions (4 new checks each), "
          f"{burners} CPU-bound processes beside it, load average {os.getloadavg()[0]:.1f}:")
    print(f"  {len(bodies)} requests in {loaded:.1f} s; requests whose scores differ from grpo score's: {differ} "
          f"({items} items); checks that ran out of time: {timeouts:.0f}")
    print(f"  the same requests again without the burners: {after} differ (a time-out remembered would differ here)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--successive", type=int, default=8, help="requests one after another, each with a new check")
    ap.add_argument("--threads", type=int, default=4, help="client threads under load")
    ap.add_argument("--requests", type=int, default=8, help="requests per client thread under load")
    ap.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside the server")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    successive(args.successive)
    if args.threads:
        busy(args.threads, args.requests, args.burners)
    return 0


if __name__ == "__main__":
    sys.exit(main())
