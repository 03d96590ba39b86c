"""The ``grpo`` command. Each subcommand lives in ``grpo_core.commands.<name>``; only the
one named on the command line is imported (``--help`` lists the others by their summary in
``grpo_core.commands.SUMMARIES``), so listing commands and ``--help`` start fast.

Plugins add commands with the ``register_commands`` hook: listed by name and description,
set up (their ``setup(parser)`` called) only when named on the command line. One that takes
a name of grpo's own, or whose setup or run raises, is named once and left out; the
other commands work as before."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
import warnings

from grpo_core.base.errors import GrpoError, PluginError, PluginWarning, describe_os_error
from grpo_core.base.version import __version__
from grpo_core.commands import SUMMARIES, plugin_commands
from grpo_core.plugin import registry


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
    if command not in SUMMARIES:  # --help, no command, or a plugin's
        for name, entry in plugin_commands().items():
            _add_plugin_command(sub, entry, set_up=command is None or name == command)
    return parser


def _add_plugin_command(sub, entry: registry.Entry, set_up: bool) -> None:
    """The plugin's command; ``set_up``: with its arguments (its ``setup(parser)`` called),
    else by name and description only."""
    where = f"plugin '{entry.plugin}'" + (f", {entry.distribution}" if entry.distribution else "")
    summary = f"{entry.description or '(no description)'} [{where}]"
    p = sub.add_parser(entry.name, help=summary, description=f"{entry.description} ({where})".strip())
    if not set_up:
        return
    try:
        entry.obj(p)
        if not callable(p.get_default("func")):
            raise TypeError("its setup(parser) set no func: call parser.set_defaults(func=run), "
                            "run(args) returning the exit code")
    except Exception as exc:  # a plugin's bug costs its own command only
        p.set_defaults(func=_broken(entry, f"setting up failed: {type(exc).__name__}: {exc}"), accepts_extra=True)
        return
    p.set_defaults(func=_guarded(entry, p.get_default("func")))


def _broken(entry: registry.Entry, why: str):
    def run(args) -> int:
        raise PluginError(f"command '{entry.name}' of {entry.source}: {why}. grpo's other commands work; "
                          f"fix or uninstall the plugin.")
    return run


def _guarded(entry: registry.Entry, func):
    """``func`` of a plugin's command: an exception it raises is an error naming the
    plugin (with where it was raised), not a traceback."""
    def run(args) -> int:
        try:
            return func(args)
        except (GrpoError, KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as exc:  # noqa: BLE001 - a plugin's bug, told as one
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            raise PluginError(f"command '{entry.name}' of {entry.source} failed: {type(exc).__name__}: {exc} "
                              f"(at {frame.filename}:{frame.lineno})") from None
    return run


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
