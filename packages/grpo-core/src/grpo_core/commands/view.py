"""`grpo view RUN_DIR [RUN_DIR ...]`: a run in the browser (curves, the rollout log as groups,
filters, two runs or two steps compared), read-only, on loopback unless told otherwise."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from grpo_core.base.net import PORTS, open_url
from grpo_core.commands import SUMMARIES, number_arg
from grpo_core.config.values import Range
from grpo_core.serve.server import check_bind, serve, token_from
from grpo_core.view.app import View, build_app
from grpo_core.view.runs import runs_of


def add_parser(sub) -> None:
    p = sub.add_parser(
        "view", help=SUMMARIES["view"],
        description="Serve one or more run directories (grpo train's output_dir, finished or still training) as "
                    "pages: curves of every figure the run logged (rewards, held-out accuracy, loss, KL, entropy, "
                    "gradient norm, completion lengths, clip ratios, learning rate, ...); its config; the rollout log "
                    "as whole groups, filtered by step, reward range and grpo rollouts' filters; up to four runs (their "
                    "curves and the settings that differ) or two steps compared. It reads the runs and never writes "
                    "them. Binds 127.0.0.1 unless --host says otherwise; any other address needs a token (as grpo "
                    "serve).")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="a run's output_dir (several: compare them)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=number_arg(Range(*PORTS)), default=8006, help="port, 1 to 65535 (default 8006)")
    p.add_argument("--token", default=None,
                   help="needed off loopback: open the page once with ?token=TOKEN, or send 'Authorization: Bearer "
                        "TOKEN' (or set $GRPO_SERVE_TOKEN)")
    p.set_defaults(func=run)


def build(args):
    """The application for these arguments (also what the tests and the bench start), with
    each run's log read in the background so the first filter finds it read."""
    runs = runs_of(args.runs)
    view = View(runs, token_from(args.token))
    view.draw()
    threading.Thread(target=view.warm, name="grpo-view-warm", daemon=True).start()
    return build_app(view)


def run(args) -> int:
    token = token_from(args.token)
    check_bind(args.host, token)
    app = build(args)
    for r in app.state.view.runs:
        for problem in r.state().problems:
            print(f"warning: run {r.index}: {problem}", file=sys.stderr)
    url, note = open_url(args.host, args.port)
    print(f"grpo view: {url} ({', '.join(str(r.path) for r in app.state.view.runs)}); read-only"
          f"{'; token required: open ' + url + '?token=...' if token else ''}. Ctrl-C stops.", file=sys.stderr)
    if note:
        print(f"grpo view: {note}.", file=sys.stderr)
    serve(app, args.host, args.port, token, graceful=3)
    return 0
