"""`grpo eval`."""

from __future__ import annotations

from . import not_yet


def add_parser(sub) -> None:
    p = sub.add_parser("eval", help="(not implemented yet)")
    p.set_defaults(func=not_yet("eval"), accepts_extra=True)
