"""The reward contract suite on every reward of the named plugin distributions, as they
are installed (scripts/wheel_check.sh runs it from a folder outside the repository).

    python wheel_contract.py CONTRACTS.json DIST [DIST ...]

CONTRACTS.json: ``{distribution: {reward: {"params": {...}, "columns": {...}, "server": ...}}}``,
the ``contract`` entries of docs/plugins.yaml (what a reward is called with when the suite's
own columns are not what it reads; ``server: module:function``, a test server the reward
needs, such as a judge reward's fake judge, up while its suite runs). Prints a line per
reward and, last, ``CONTRACT N rewards of M plugins passed`` (exit 0) or
``CONTRACT failed: ...`` (exit 1).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Iterator


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    contracts = json.loads(open(argv[0], encoding="utf-8").read())
    dists = argv[1:]
    import grpo_core
    from grpo_core.contract import check_reward

    rewards = grpo_core.list_rewards()
    failed, passed = [], 0
    for dist in dists:
        names = [r.name for r in rewards if r.distribution == dist]
        print(f"{dist}: {len(names)} reward(s)")
        for name in names:
            how = contracts.get(dist, {}).get(name, {})
            with served(how.get("server")) as params:
                results = check_reward(name, {**params, **(how.get("params") or {})}, how.get("columns"))
            bad = [str(r) for r in results if not r.ok]
            print(f"  {name}: {len(results) - len(bad)} passed, {len(bad)} failed" + "".join(f"\n    {b}" for b in bad))
            if bad:
                failed.append(name)
            else:
                passed += 1
    if failed:
        print(f"CONTRACT failed: {', '.join(failed)}")
        return 1
    print(f"CONTRACT {passed} rewards of {len(dists)} plugins passed")
    return 0


@contextlib.contextmanager
def served(ref: str | None) -> Iterator[dict]:
    """A contract entry's ``server: module:function``: a context manager yielding the parameters
    (a url) of a server the reward needs, up while its contract suite runs ({} without one).
    tests/core/test_plugin_directory.py uses it too."""
    if not ref:
        yield {}
        return
    module, _, function = ref.partition(":")
    with getattr(importlib.import_module(module), function)() as params:
        yield params


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
