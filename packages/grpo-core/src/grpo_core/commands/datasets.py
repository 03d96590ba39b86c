"""`grpo datasets list|show NAME [--param value ...]`."""

from __future__ import annotations

from grpo_core.base.params import split_signature
from grpo_core.commands import SUMMARIES, parse_key_values, print_entries, print_json
from grpo_core.data.datasets import build_prompts, list_datasets, load_dataset
from grpo_core.plugin import registry


def add_parser(sub) -> None:
    p = sub.add_parser("datasets", help=SUMMARIES["datasets"])
    ds = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = ds.add_parser("list", help="every registered dataset adapter")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)
    show = ds.add_parser(
        "show",
        help="load an adapter and print built prompts and answers; adapter parameters "
        "as --key value (e.g. --path data.jsonl)",
    )
    show.add_argument("name")
    show.add_argument("--split", default="train")
    show.add_argument("--limit", type=int, default=3, help="rows to print (default 3)")
    show.add_argument("--system-prompt", default=None, help="registered name or text")
    show.add_argument("--few-shot", type=int, default=0)
    show.add_argument("--json", action="store_true", help="print the rows as JSON")
    show.set_defaults(func=run_show, accepts_extra=True)


def run_list(args) -> int:
    return print_entries(list_datasets(), args.json,
                         "No datasets registered. Install a dataset plugin: pip install ./packages/grpo-datasets from a grpo checkout")


def run_show(args) -> int:
    import datasets

    datasets.disable_progress_bars()
    params = parse_key_values(args.extra, "grpo datasets show")
    loader_params, _, _ = split_signature(registry.datasets().get(args.name).obj)
    if "limit" in loader_params:
        params.setdefault("limit", args.limit + args.few_shot)
    ds = load_dataset(args.name, split=args.split, **params)
    if len(ds) > args.limit + args.few_shot:
        ds = ds.select(range(args.limit + args.few_shot))
    ds = build_prompts(ds, system_prompt=args.system_prompt, few_shot=args.few_shot)
    rows = [ds[i] for i in range(min(args.limit, len(ds)))]
    if args.json:
        print_json(rows)
        return 0
    print(f"{args.name} ({args.split}): {len(ds)} rows; columns: {', '.join(ds.column_names)}")
    for i, row in enumerate(rows):
        print(f"\n--- row {i} ---")
        for msg in row["prompt"]:
            print(f"[{msg['role']}] {msg['content']}")
        if "answer" in row:
            print(f"=> answer: {row['answer']}")
    return 0
