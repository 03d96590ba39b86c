"""`grpo plugin new NAME`: write a ready plugin package (see ``grpo_core.authoring.scaffold``)."""

from __future__ import annotations

from grpo_core.authoring.scaffold import create
from grpo_core.commands import SUMMARIES


def add_parser(sub) -> None:
    p = sub.add_parser("plugin", help=SUMMARIES["plugin"])
    ps = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = ps.add_parser(
        "new",
        help="write a plugin package: entry point, an example reward, contract tests, a config, a README",
        description="Write grpo-NAME/ (or --dir): a plugin package that installs with pip install -e "
        "and whose tests pass as written. NAME like 'acme' or 'my-rewards'; its rewards are "
        "named NAME.* (with '-' as '_').",
    )
    new.add_argument("name", metavar="NAME")
    new.add_argument("--dir", default=None, help="where to write it (default ./grpo-NAME); must not exist")
    new.set_defaults(func=run_new)


def run_new(args) -> int:
    names, root, written = create(args.name, args.dir)
    print(f"Created {root}/: distribution {names.distribution}, module {names.package}, "
          f"rewards {names.namespace}.*")
    for path in written:
        print(f"  {path}")
    print("\nNext:")
    print(f'  pip install -e "{root}[test]"    # [test]: pytest')
    print(f"  cd {root} && python -m pytest")
    print(f"  grpo rewards check {names.namespace}.concise")
    print(f"  grpo train {root / 'train.yaml'}    # needs grpo-datasets and grpo-rewards-math")
    return 0
