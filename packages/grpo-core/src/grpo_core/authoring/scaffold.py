"""``grpo plugin new NAME``: a ready plugin package, from the templates below.

``NAME`` (``acme``, ``my-rewards``) gives the distribution ``grpo-my-rewards``,
the module ``grpo_my_rewards`` and the reward namespace ``my_rewards.``. The
package is what ``docs/writing-plugins.md`` builds by hand: the ``grpo`` entry
point, one reward whose docstring gives its formula, tests that subclass
``RewardContract``, a short training config and a README.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from string import Template

from grpo_core.base.errors import GrpoError
from grpo_core.base.version import __version__
from grpo_core.plugin.plugins import ENTRY_POINT_GROUP, _normalize
from grpo_core.plugin.registry import KNOWN_DATASETS, KNOWN_NAMESPACES

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
              "core": ".".join(__version__.split(".")[:2])}
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
dependencies = ["grpo-core>=$core"]

[project.optional-dependencies]
test = ["pytest>=8"]

# This entry point makes the package a grpo plugin: its name is the plugin's,
# its value the module with the hook implementations.
[project.entry-points.grpo]
$ns = "$package"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

MODULE = '''\
"""grpo plugin $dist: the rewards $ns.*"""

from __future__ import annotations

from grpo_core import hookimpl, text_reward


@text_reward
def concise(completions: list[str], max_words: int = 100, **kwargs) -> list[float]:
    """Full marks up to max_words words, then less: min(1, max(0, 2 - words / max_words)).

    1.0 at or under ``max_words`` words, 0.5 at 1.5 x ``max_words``, 0.0 at twice it
    and beyond (words are runs of non-space characters). It says nothing about
    whether an answer is right: train it next to a correctness reward.
    """
    if max_words <= 0:
        raise ValueError(f"max_words must be positive, got {max_words}")
    return [min(1.0, max(0.0, 2.0 - len(c.split()) / max_words)) for c in completions]


@hookimpl
def register_rewards(register):
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


def test_concise_values():
    # 10 words allowed: full marks up to 10, half at 15, nothing from 20 on
    completions = ["word " * n for n in (0, 10, 15, 20, 30)]
    assert $package.concise(completions, max_words=10) == [1.0, 1.0, 0.5, 0.0, 0.0]


def test_concise_reads_conversational_completions():
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
grpo rewards show $ns.concise
grpo rewards check $ns.concise --max_words 40
grpo train train.yaml               # needs grpo-datasets and grpo-rewards-math too
```

Add rewards in `src/$package/__init__.py`: a TRL reward function
(`func(completions, **kwargs) -> list[float | None]`, its formula in the docstring),
registered as `$ns.<name>` in `register_rewards`, and a `RewardContract` subclass
for it in `tests/`. Keyword parameters with defaults are reward parameters;
keyword parameters without defaults (`answer`) are dataset columns the reward needs.
The other hooks (`register_datasets`, `register_system_prompts`, `register_probes`)
are described in grpo's guide, `docs/writing-plugins.md`.

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

TEMPLATES = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "train.yaml": TRAIN,
    "src/$package/__init__.py": MODULE,
    "tests/test_contract.py": TESTS,
}
