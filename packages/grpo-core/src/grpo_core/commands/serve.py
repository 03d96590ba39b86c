"""`grpo serve`: a reward server for a config's rewards or a list of specs (docs/serve.md)."""

from __future__ import annotations

import sys

from grpo_core.base.errors import GrpoError
from grpo_core.base.net import PORTS, open_url
from grpo_core.base.params import reserved_columns_problem
from grpo_core.commands import SUMMARIES, number_arg
from grpo_core.config import models
from grpo_core.config.load import load_config
from grpo_core.config.values import Range
from grpo_core.serve.app import Server, build_app
from grpo_core.serve.bodies import Limits
from grpo_core.serve.openrlhf import ScoresScale
from grpo_core.serve.responses import Ends
from grpo_core.serve.scoring import Pool, RewardSet
from grpo_core.serve.server import check_bind, serve, token_from

# a server's reward call is always bounded (as in training: health.reward_time_limit takes no 0)
TIME_LIMIT = Range(0, low_open=True, note="a reward call is always bounded; for slow rewards give more, e.g. 600")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "serve", help=SUMMARIES["serve"],
        description="Serve rewards over HTTP: POST /score (each reward's scores, the weighted total, notes), "
                    "POST /get_reward (OpenRLHF's remote reward protocol), GET /rewards, GET /health. "
                    "Binds 127.0.0.1 unless --host says otherwise; any other address needs a token.")
    p.add_argument("config", nargs="?", help="a run config whose rewards to serve (its first stage, or --stage)")
    p.add_argument("--rewards", nargs="+", metavar="SPEC", help="reward specs instead of a config")
    p.add_argument("--stage", help="the config's stage whose rewards to serve")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=number_arg(Range(*PORTS)), default=8005, help="TCP port, 1-65535 (default 8005)")
    p.add_argument("--token", default=None,
                   help="clients must send 'Authorization: Bearer TOKEN'; other users of the machine see it in the "
                        "process list: prefer $GRPO_SERVE_TOKEN or --token-file")
    p.add_argument("--token-file", default=None, metavar="PATH", help="read the token from this file (its first line)")
    p.add_argument("--workers", type=int, default=4, help="requests scored at once (default 4)")
    p.add_argument("--queue", type=int, default=64, help="requests waiting for a worker before 429 (default 64)")
    p.add_argument("--time-limit", type=number_arg(TIME_LIMIT, whole=False), default=None,
                   help="seconds per reward call, above 0 (default: the config's health.reward_time_limit, else 120)")
    p.add_argument("--max-body", type=int, default=8 * 1024 * 1024, help="bytes per request (default 8 MiB)")
    p.add_argument("--max-items", type=int, default=4096, help="completions per request (default 4096)")
    p.add_argument("--max-chars", type=int, default=200_000, help="characters per completion (default 200000)")
    p.add_argument("--label-column", default="answer",
                   help="the column OpenRLHF's 'labels' fill for /get_reward (default answer)")
    p.add_argument("--eos", nargs="+", default=[], metavar="TEXT",
                   help="end-of-sequence or end-of-turn text removed from a completion's end, besides the common "
                        "chat templates' (<|im_end|>, <|endoftext|>, </s>, <|eot_id|>, <end_of_turn>, ...) and the "
                        "config's model's tokenizer's")
    p.add_argument("--scores", default="auto", metavar="WHAT",
                   help="what /get_reward's 'scores' (OpenRLHF's dynamic filtering) holds: normalized (the total "
                        "scaled into [0, 1] by the rewards' declared ranges), total, or a reward's name (its value, "
                        "scaled by its range); auto (default): normalized when every reward declares a range")
    p.set_defaults(func=run)


def build(args):
    """The application for these arguments (also what tests and the bench start)."""
    if bool(args.config) == bool(args.rewards):
        raise GrpoError("name a config (grpo serve CONFIG) or reward specs (--rewards SPEC ...), one of the two.")
    for flag in ("workers", "queue", "max_body", "max_items", "max_chars"):
        if getattr(args, flag) < (0 if flag == "queue" else 1):
            raise GrpoError(f"--{flag.replace('_', '-')} must be positive, got {getattr(args, flag)}.")
    problem = reserved_columns_problem([args.label_column])
    if problem:
        raise GrpoError(f"--label-column {args.label_column}: {problem}")
    if args.config:
        rewards = RewardSet.from_config(args.config, args.stage)
        if args.time_limit is not None:
            rewards.time_limit = args.time_limit
    else:
        rewards = RewardSet.from_specs(args.rewards, args.time_limit or 120.0)
    pool = Pool(rewards, workers=args.workers, queue_size=args.queue,
                log=lambda line: print(line, file=sys.stderr))
    limits = Limits(args.max_body, args.max_items, args.max_chars)
    ends = Ends.of(getattr(args, "eos", ()), _tokenizer(args.config) if args.config else None)
    scale = ScoresScale.choose(getattr(args, "scores", "auto"), pool.names, rewards.weights, pool.ranges)
    return build_app(Server(pool, limits, _token(args), args.label_column, ends, scale))


def _token(args) -> str | None:
    path = getattr(args, "token_file", None)
    if not path:
        return token_from(args.token)
    if args.token:
        raise GrpoError("give --token or --token-file, not both.")
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.readline().strip()
    except OSError as exc:
        raise GrpoError(f"--token-file {path}: cannot read it ({exc.strerror}).") from None
    if not token:
        raise GrpoError(f"--token-file {path} is empty; write the token on its first line.")
    return token


def _tokenizer(config: str):
    """The tokenizer of the config's model, for its end-of-sequence text, when it is on this
    machine already (a server downloads no model); None, said once, when it is not."""
    model_id = load_config(config).model.id
    if not model_id:
        return None
    try:
        from transformers import AutoTokenizer

        path = models.alias_path(model_id) if model_id in models.ALIASES else model_id
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # not downloaded, not a tokenizer: the default markers stand
        print(f"grpo serve: the tokenizer of {model_id} is not on this machine ({type(exc).__name__}); removing the "
              f"common chat templates' end markers only (add the model's with --eos TEXT).", file=sys.stderr)
        return None


def run(args) -> int:
    token = _token(args)
    check_bind(args.host, token)
    if args.token:
        print("grpo serve: --token is visible to other users in the process list; prefer $GRPO_SERVE_TOKEN or "
              "--token-file.", file=sys.stderr)
    app = build(args)
    server = app.state.server
    url, note = open_url(args.host, args.port)
    print(f"grpo serve: {url.rstrip('/')} ({', '.join(server.pool.names)}); POST /score, POST /get_reward "
          f"('scores': {server.scale.describe()}), GET /rewards, GET /health{'; token required' if token else ''}. "
          f"Ctrl-C stops after the requests in flight." + (f" Note: {note}." if note else ""), file=sys.stderr)
    serve(app, args.host, args.port, token)
    return 0
