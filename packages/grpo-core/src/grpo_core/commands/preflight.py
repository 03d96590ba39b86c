"""`grpo preflight`."""

from __future__ import annotations

from . import not_yet


def add_parser(sub) -> None:
    p = sub.add_parser("preflight", help="(not implemented yet)")
    p.set_defaults(func=not_yet("preflight"), accepts_extra=True)
