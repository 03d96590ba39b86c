"""`grpo generate MODEL_OR_DIR --prompt ... | --input FILE`: inference with the chat template."""

from __future__ import annotations

import json
from pathlib import Path

from grpo_core.base.errors import GrpoError
from grpo_core.base.tables import number
from grpo_core.commands import SUMMARIES, number_arg
from grpo_core.config.values import Range
from grpo_core.data.datasets import build_prompt, check_columns, resolve_system_prompt
from grpo_core.rewards.reward import compose_rewards
from grpo_core.rewards.scoring import score_batch
from grpo_core.trainer.generation import generate, load_policy


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help=SUMMARIES["generate"])
    p.add_argument("model", help="hub id, local dir, .gguf, alias, checkpoint or adapter dir")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", action="append", help="a user message (repeatable)")
    src.add_argument("--input", type=Path, help="JSONL with 'question' or 'prompt' per line")
    p.add_argument("--system-prompt", default=None, help="registered name (e.g. plain, xml) or text")
    p.add_argument("--base", default=None, help="base model for an adapter dir (default: from the adapter)")
    p.add_argument("--max-new-tokens", type=number_arg(Range(1)), default=256, help="tokens per completion (>= 1)")
    p.add_argument("--temperature", type=number_arg(Range(0, low_open=True), whole=False), default=1.0,
                   help="sampling temperature (> 0; --greedy for none)")
    p.add_argument("--top-p", type=number_arg(Range(0, 1, low_open=True), whole=False), default=1.0,
                   help="nucleus sampling (0, 1]")
    p.add_argument("--greedy", action="store_true", help="greedy decoding (no sampling)")
    p.add_argument("-n", "--num", type=number_arg(Range(1)), default=1, help="completions per prompt (>= 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rewards", nargs="+", metavar="SPEC", help="score the completions with these rewards")
    p.add_argument("--json", action="store_true", help="print JSON lines")
    p.set_defaults(func=run)


def _rows(args) -> list[dict]:
    if args.prompt:
        return [{"question": q} for q in args.prompt]
    if not args.input.is_file():
        raise GrpoError(f"--input {args.input}: no such file.")
    rows = []
    for lineno, line in enumerate(args.input.read_text().splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if "question" not in row and "prompt" not in row:
                raise GrpoError(f"{args.input}:{lineno} needs a 'question' (text) or 'prompt' (messages).")
            rows.append(row)
    return rows


def run(args) -> int:
    rows = _rows(args)
    funcs, weights = compose_rewards(args.rewards) if args.rewards else ([], [])
    if funcs:
        check_columns(set().union(*(r.keys() for r in rows)) | {"prompt"}, funcs, "the input")
    system, _ = resolve_system_prompt(args.system_prompt)
    prompts = [r["prompt"] if "prompt" in r else build_prompt(r["question"], system) for r in rows]
    model, tokenizer = load_policy(args.model, base=args.base)
    groups = generate(model, tokenizer, prompts, n=args.num, max_new_tokens=args.max_new_tokens,
                      temperature=args.temperature, top_p=args.top_p, do_sample=not args.greedy,
                      seed=args.seed)
    for row, prompt, group in zip(rows, prompts, groups):
        texts = [c.text for c in group]
        scores = []
        if funcs:
            scored = score_batch(funcs, weights, texts, [row] * len(texts), [prompt] * len(texts))
            scores = [dict({f.__name__: p[i] for f, p in zip(funcs, scored.per_reward)}, total=scored.totals[i])
                      for i in range(len(texts))]
        if args.json:
            for i, c in enumerate(group):
                print(json.dumps({"prompt": prompt, "completion": c.text, "num_tokens": c.num_tokens,
                            "truncated": c.truncated, **({"scores": scores[i]} if scores else {})}))
            continue
        print(f"### {prompt[-1]['content']}")
        for i, c in enumerate(group):
            tag = f"[{i + 1}/{len(group)}] " if len(group) > 1 else ""
            print(f"{tag}{c.text}")
            if scores:
                print("    scores: " + ", ".join(f"{k}={_fmt(v)}" for k, v in scores[i].items()))
        print()
    return 0


def _fmt(v) -> str:
    return number(v, 3, missing="None")
