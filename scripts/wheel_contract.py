"""The reward contract suite on every reward of the named plugin distributions, as they
are installed (scripts/wheel_check.sh runs it from a folder outside the repository).

    python wheel_contract.py CONTRACTS.json DIST [DIST ...]

CONTRACTS.json: ``{distribution: {reward: {"params": {...}, "columns": {...}}}}``, the
``contract`` entries of docs/plugins.yaml (what a reward is called with when the suite's
own columns are not what it reads). Prints a line per reward and, last,
``CONTRACT N rewards of M plugins passed`` (exit 0) or ``CONTRACT failed: ...`` (exit 1).
"""

from __future__ import annotations

import json
import sys


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
            results = check_reward(name, how.get("params"), how.get("columns"))
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
