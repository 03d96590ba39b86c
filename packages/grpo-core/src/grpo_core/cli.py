"""The ``grpo`` command. Each subcommand lives in ``grpo_core.commands.<name>``; only the
one named on the command line is imported (``--help`` lists the others by their summary in
``grpo_core.commands.SUMMARIES``), so listing commands and ``--help`` start fast."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from grpo_core.base.errors import GrpoError, PluginWarning, describe_os_error
from grpo_core.base.version import __version__
from grpo_core.commands import SUMMARIES


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``grpo`` parser. ``command``: only that subcommand's module is imported (the
    others are listed by name and summary), so a command starts without loading the
    rest; None: every subcommand, complete."""
    parser = argparse.ArgumentParser(
        prog="grpo",
        description="GRPO fine-tuning on TRL with rewards and datasets found by name.",
    )
    parser.add_argument("--version", action="version", version=f"grpo {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in SUMMARIES.items():
        if command is None or name == command:
            importlib.import_module(f"grpo_core.commands.{name}").add_parser(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def _command(argv: list[str]) -> str:
    """The subcommand named on the command line ("" when none is)."""
    return next((a for a in argv if not a.startswith("-")), "")


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, PluginWarning):
        print(f"warning: {message}", file=sys.stderr)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if extra and not getattr(args, "accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
        return int(args.func(args) or 0)
    except GrpoError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `grpo rewards list | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except (OSError, RuntimeError) as exc:

        line = describe_os_error(exc)
        if line is None:
            raise
        print(f"Error: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
