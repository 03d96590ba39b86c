"""``grpo plugin new NAME``: a ready plugin package, from the templates below.

``NAME`` (``acme``, ``my-rewards``) gives the distribution ``grpo-my-rewards``,
the module ``grpo_my_rewards`` and the reward namespace ``my_rewards.``. The
package is what ``docs/writing-plugins.md`` builds by hand: the ``grpo`` entry
point, one reward whose docstring gives its formula, tests that subclass
``RewardContract``, a short training config, sample rows with a ``grpo check``
config, a GitHub Actions workflow that gates on all of it, and a README. Its code
type-checks under ``mypy --strict`` (``[tool.mypy]`` in its pyproject).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from string import Template

from grpo_core.base.errors import GrpoError
from grpo_core.plugin.api import PLUGIN_API, core_requirement
from grpo_core.plugin.hints import KNOWN_DATASETS, KNOWN_NAMESPACES
from grpo_core.plugin.plugins import ENTRY_POINT_GROUP, _normalize

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


@dataclass(frozen=True)
class PluginNames:
    distribution: str  # grpo-my-rewards
    package: str  # grpo_my_rewards
    namespace: str  # my_rewards: entry-point name and reward-name prefix


def plugin_names(name: str) -> PluginNames:
    """The names a plugin called ``name`` gets; a leading ``grpo-`` is dropped."""
    base = re.sub(r"^grpo[-_]", "", name)
    if not NAME_RE.match(base):
        raise GrpoError(
            f"plugin name {name!r} must be lower-case letters and digits, words joined by '-' or '_', "
            f"starting with a letter (e.g. 'acme' or 'my-rewards'); it names the distribution "
            f"grpo-<name>, the module grpo_<name> and the rewards <name>.*")
    snake = base.replace("-", "_")
    return PluginNames(f"grpo-{snake.replace('_', '-')}", f"grpo_{snake}", snake)


def taken_by(namespace: str, distribution: str) -> str | None:
    """The installed or known distribution that already uses ``namespace``, if any."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        owner = _normalize(ep.dist.name) if ep.dist is not None else None
        if ep.name == namespace and owner != distribution:
            return owner or ep.value
    known = {"code": "grpo-rewards-code", "datasets": "grpo-datasets", "core": "grpo-core", "grpo": "grpo-core",
             **KNOWN_NAMESPACES}  # our own namespaces, installed or not
    if namespace in known:
        return known[namespace]
    return KNOWN_DATASETS.get(namespace)


def render(names: PluginNames) -> dict[str, str]:
    """Relative path -> text of every file of the package."""

    values = {"dist": names.distribution, "package": names.package, "ns": names.namespace,
              "core": core_requirement(), "api": PLUGIN_API}
    return {path.replace("$package", names.package): Template(text).substitute(values)
            for path, text in TEMPLATES.items()}


def create(name: str, directory: str | Path | None = None) -> tuple[PluginNames, Path, list[Path]]:
    """Write the package for ``name`` into ``directory`` (default ``./grpo-<name>``), which
    must not exist. Returns the names, the directory and the files written."""
    names = plugin_names(name)
    owner = taken_by(names.namespace, names.distribution)
    if owner:
        raise GrpoError(
            f"the reward namespace '{names.namespace}' belongs to {owner} (its rewards are named "
            f"'{names.namespace}.*'); two plugins with one namespace clash on every name. Pick another "
            f"NAME, e.g. 'acme-{name}'.")
    root = Path(directory) if directory is not None else Path(names.distribution)
    if root.exists() or root.is_symlink():
        raise GrpoError(
            f"{root} already exists; grpo plugin new writes a new directory and never overwrites "
            f"one. Remove it, or give another path with --dir.")
    written = []
    root.mkdir(parents=True)
    try:
        for rel, text in render(names).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)  # nothing half-written is left behind
        raise
    return names, root, written


PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "grpo reward plugin: $ns.*"
readme = "README.md"
requires-python = ">=3.10"
# grpo-core: the releases that provide the plugin API this package declares (GRPO_PLUGIN_API)
dependencies = ["$core"]

[project.optional-dependencies]
test = ["pytest>=8", "mypy>=1.10"]

# This entry point makes the package a grpo plugin: its name is the plugin's,
# its value the module with the hook implementations.
[project.entry-points.grpo]
$ns = "$package"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]

[tool.mypy]
strict = true
files = ["src", "tests"]
mypy_path = "src"

# the training stack is type-checked by its own authors: not followed here (seconds, not
# minutes, when grpo_core.testing is imported)
[[tool.mypy.overrides]]
module = ["torch.*", "transformers.*", "trl.*", "datasets.*", "tokenizers.*", "peft.*", "accelerate.*"]
follow_imports = "skip"
"""

MODULE = '''\
"""grpo plugin $dist: the rewards $ns.*"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grpo_core import hookimpl, text_reward

# the grpo plugin API this module is written for: a grpo-core that provides another
# refuses it by name instead of failing on use (grpo plugins shows it)
GRPO_PLUGIN_API = "$api"


@text_reward
def concise(completions: list[str], max_words: int = 100, **kwargs: Any) -> list[float]:
    """Full marks up to max_words words, then less: min(1, max(0, 2 - words / max_words)).

    1.0 at or under ``max_words`` words, 0.5 at 1.5 x ``max_words``, 0.0 at twice it
    and beyond (words are runs of non-space characters). It says nothing about
    whether an answer is right: train it next to a correctness reward.
    """
    if max_words <= 0:
        raise ValueError(f"max_words must be positive, got {max_words}")
    return [min(1.0, max(0.0, 2.0 - len(c.split()) / max_words)) for c in completions]


@hookimpl
def register_rewards(register: Callable[..., None]) -> None:
    register("$ns.concise", concise)
'''

TESTS = '''\
import $package
from grpo_core.authoring.contract import RewardContract


class TestConciseContract(RewardContract):
    """One length per completion, floats or None, hostile text, both completion
    shapes, picklable, deterministic, callable from a thread."""

    reward = "$ns.concise"
    plugin = $package  # registered here when the installed plugin is not loaded


def test_concise_values() -> None:
    # 10 words allowed: full marks up to 10, half at 15, nothing from 20 on
    completions = ["word " * n for n in (0, 10, 15, 20, 30)]
    assert $package.concise(completions, max_words=10) == [1.0, 1.0, 0.5, 0.0, 0.0]


def test_concise_reads_conversational_completions() -> None:
    completion = [{"role": "assistant", "content": "word " * 15}]
    assert $package.concise([completion], max_words=10) == [0.5]
'''

TRAIN = """\
# A short GRPO run with this plugin's reward next to a correctness reward, on
# SmolLM2-135M-Instruct and level-1 arithmetic. It needs the grpo-datasets and
# grpo-rewards-math plugins installed next to this one.
#
#   grpo check train.yaml     # the rewards against the data, no model, in seconds
#   grpo train train.yaml     # outputs in outputs/train/

model:
  id: smollm2-135m
lora:
  r: 16
  lora_alpha: 32
  target_modules: all-linear
dataset:
  name: arithmetic
  params: {level: 1, kind: symbol, size: 200, shuffle: true}
  system_prompt: plain      # "... final answer on its own line as 'Answer: <answer>'"
rewards:
  - math.correctness(fallback_last_number=True):1.0
  - name: $ns.concise
    weight: 0.2
    params: {max_words: 20}

max_steps: 10
learning_rate: 5.0e-4
per_device_train_batch_size: 8
num_generations: 4
max_completion_length: 48
gradient_checkpointing: false
seed: 0
"""

README = """\
# $dist

A reward plugin for grpo (GRPO fine-tuning on TRL). Once installed, its
rewards are found by name: `grpo rewards list`, `compose_rewards(["$ns.concise:0.2"])`,
`rewards:` in a training config.

| reward | what it pays |
|---|---|
| `$ns.concise(max_words=100)` | `min(1, max(0, 2 - words / max_words))`: 1.0 up to `max_words` words, 0.0 from twice that |

## Develop

```
pip install -e ".[test]"            # next to an installed grpo-core
python -m pytest                    # the reward contract suite and your own tests
python -m mypy                      # strict type check (grpo-core ships its types)
grpo rewards show $ns.concise
grpo rewards check $ns.concise --max_words 40
grpo check check.yaml               # the rewards on data/sample.jsonl: gold full marks, no hacks paid
grpo train train.yaml               # needs grpo-datasets and grpo-rewards-math too
```

Add rewards in `src/$package/__init__.py`: a TRL reward function
(`func(completions, **kwargs) -> list[float | None]`, its formula in the docstring),
registered as `$ns.<name>` in `register_rewards`, and a `RewardContract` subclass
for it in `tests/`. Keyword parameters with defaults are reward parameters;
keyword parameters without defaults (`answer`) are dataset columns the reward needs.
The other hooks (`register_datasets`, `register_system_prompts`, `register_probes`)
are described in grpo's guide, `docs/writing-plugins.md`.

`GRPO_PLUGIN_API = "$api"` in `src/$package/__init__.py` is the grpo plugin API the
package is written for, and `$core` in `pyproject.toml` the grpo-core releases that
provide it: a grpo-core that provides another API refuses the plugin by name, with
both versions, instead of failing later. grpo's `docs/plugin-api.md` lists each
version's hooks; raise both when you use one that is newer.

## CI

`.github/workflows/grpo.yml` runs on every push and pull request: it installs this
package next to grpo-core (CPU torch), runs the tests above, `mypy`, and two gates
whose exit codes are documented: `grpo rewards check NAME` (0: the reward meets the
contract; 1: a contract check failed; 2: bad input, e.g. an unknown reward) and
`grpo check check.yaml` (0: every reward passes on `data/sample.jsonl`; 1: a check
failed; 2: a bad config). Their JSON reports (`--json FILE`) are kept as the run's
artifact. Add a `grpo rewards check` line per reward you add, and replace the sample
rows with rows of your task. Until grpo-core is on PyPI, set the repository variable
`GRPO_CORE` to what pip installs it from (the workflow says how).

## Publish

```
python -m pip install build twine
python -m build                     # dist/*.whl: install it next to grpo-core anywhere
python -m twine upload dist/*       # only once grpo-core itself is on PyPI
```

Until grpo-core is published on PyPI, pip cannot resolve this package's
dependency on it there: share the wheel instead, installed next to a grpo-core
from a clone of grpo or from its wheels.
"""

CHECK = """\
# grpo check on this plugin's sample rows, no model, in seconds: does each reward give
# the gold answer, written as the prompt asks, full marks, and pay nothing for hacks
# (hedges, copied questions, empty answers, ...)? Replace data/sample.jsonl with rows of
# your task (a problem and its solution) and list the rewards you train next to.
#
#   grpo check check.yaml --json report.json   # exit 0: pass; 1: a check failed; 2: bad config

model:
  id: unused                   # grpo check loads no model
dataset:
  name: openr1                 # grpo-core's own loader: a local JSONL file, no other plugin needed
  params: {dataset_name: data/sample.jsonl, prompt_column: problem}
  system_prompt: plain         # "... final answer on its own line as 'Answer: <answer>'"
rewards:
  - $ns.concise
"""

SAMPLE = "".join(f'{{"problem": "{q}", "solution": "{a}"}}\n' for q, a in [
    ("What is 7 + 5?", "12"), ("What is 9 * 3?", "27"), ("What is 40 - 17?", "23"), ("What is 56 / 8?", "7"),
    ("A box holds 6 eggs. How many eggs are in 4 boxes?", "24"),
    ("Tom has 15 marbles and gives away 6. How many does he keep?", "9"),
    ("A train travels 60 km each hour. How far does it go in 3 hours?", "180"),
    ("Sara reads 12 pages a day. How many pages does she read in a week?", "84"),
])

WORKFLOW = """\
# CI for $dist: install it next to grpo-core, run its tests (the reward contract
# suite) and mypy, and gate on grpo's own checks of its rewards:
#   grpo rewards check NAME   exit 0: meets the reward contract; 1: a check failed; 2: bad input
#   grpo check check.yaml     exit 0: the rewards pass on the sample rows; 1: a check failed; 2: bad config
# Both write a JSON report (--json FILE), kept as the run's artifact.
#
# grpo-core is installed from PyPI once it is published there. Until then, set the
# repository variable GRPO_CORE (Settings > Secrets and variables > Actions > Variables)
# to what pip installs it from, e.g.
#   grpo-core @ git+https://github.com/OWNER/grpo@main#subdirectory=packages/grpo-core
name: grpo plugin CI

on:
  push:
  pull_request:

jobs:
  check:
    runs-on: ubuntu-latest
    env:
      HF_HUB_OFFLINE: "1"        # nothing here needs the Hub
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install grpo-core (CPU torch) and this plugin
        run: |
          python -m pip install --upgrade pip
          python -m pip install torch --index-url https://download.pytorch.org/whl/cpu
          python -m pip install "$${{ vars.GRPO_CORE || '$core' }}"
          python -m pip install -e ".[test]"
      - name: Tests and the reward contract suite
        run: python -m pytest
      - name: Type check
        run: python -m mypy
      - name: The reward contract, from the command line
        run: grpo rewards check $ns.concise --json reports/contract-$ns.concise.json
      - name: grpo check on the sample rows (gold self-test, reward-hacking probes)
        run: grpo check check.yaml --json reports/check.json
      - name: Keep the reports
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: grpo-reports
          path: reports/
"""

TEMPLATES = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "train.yaml": TRAIN,
    "check.yaml": CHECK,
    "data/sample.jsonl": SAMPLE,
    "src/$package/__init__.py": MODULE,
    "tests/test_contract.py": TESTS,
    ".github/workflows/grpo.yml": WORKFLOW,
}
