"""`grpo prompts list|show NAME`: the registered system prompts and their answer templates."""

from __future__ import annotations

from grpo_core.commands import SUMMARIES, print_json, table
from grpo_core.data.datasets import list_system_prompts, system_prompt_entry


def add_parser(sub) -> None:
    p = sub.add_parser("prompts", help=SUMMARIES["prompts"])
    ps = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = ps.add_parser("list", help="every registered system prompt")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)
    show = ps.add_parser("show", help="a system prompt's text and answer template")
    show.add_argument("name")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=run_show)


def templates(entry) -> list[str]:
    """The answer templates of a prompt: none, one, or several tried in order."""
    template = entry.extra.get("answer_template")
    if template is None:
        return []
    return [template] if isinstance(template, str) else list(template)


def as_dict(entry) -> dict:
    return {"name": entry.name, "plugin": entry.plugin, "distribution": entry.distribution,
            "version": entry.version, "description": entry.description, "text": entry.obj,
            "answer_templates": templates(entry)}


def run_list(args) -> int:
    entries = list_system_prompts()
    if args.json:
        print_json([as_dict(e) for e in entries])
    elif not entries:
        print("No system prompts registered; a plugin adds them with the register_system_prompts hook.")
    else:
        print(table([[e.name, e.distribution or "-", e.description] for e in entries],
                    ["name", "distribution", "description"]))
    return 0


def run_show(args) -> int:
    entry = system_prompt_entry(args.name)
    if args.json:
        print_json(as_dict(entry))
        return 0
    print(f"{entry.name}  ({entry.source}{', version ' + entry.version if entry.version else ''})")
    if entry.description:
        print(entry.description)
    print("\nText:")
    print(_indent(entry.obj))
    found = templates(entry)
    if not found:
        print("\nAnswer template: none (few-shot answers and `grpo check` use the bare {answer})")
    elif len(found) == 1:
        print("\nAnswer template (a few-shot answer and `grpo check`'s gold completion):")
        print(_indent(found[0]))
    else:
        print(f"\nAnswer templates ({len(found)}; the first whose fields the row has is used):")
        for i, template in enumerate(found, 1):
            print(f"  [{i}]")
            print(_indent(template, "    "))
    return 0


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())
