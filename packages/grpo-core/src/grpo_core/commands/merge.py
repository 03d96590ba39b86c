"""`grpo merge`."""

from __future__ import annotations

from . import not_yet


def add_parser(sub) -> None:
    p = sub.add_parser("merge", help="(not implemented yet)")
    p.set_defaults(func=not_yet("merge"), accepts_extra=True)
