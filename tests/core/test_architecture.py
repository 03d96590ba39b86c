"""grpo_core's rooms keep to docs/architecture.md: each imports only its own room and the
floors below, nothing imports in a circle (imports inside functions counted), and an
import sits inside a function only when what it imports loads a heavy library."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grpo_core

PKG = Path(grpo_core.__file__).parent
DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
# what a listing command must not load: the training stack, and asyncio's (30 ms of a 250 ms start)
HEAVY = {"torch", "trl", "transformers", "datasets", "peft", "accelerate", "matplotlib", "safetensors", "numpy",
         "pyarrow", "pandas", "math_verify", "sympy", "gguf", "vllm", "asyncio"}
FACE = {"grpo_core", "grpo_core.cli", "grpo_core.__main__"}


def modules() -> dict[str, ast.Module]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = ast.parse(path.read_text())
    return out


MODULES = modules()
ALIASES = {m for m, tree in MODULES.items() if m.count(".") == 1 and "sys.modules[__name__]" in ast.unparse(tree)}


def floors() -> dict[str, int]:
    rows = re.findall(r"^\| (\d+) \| `(\w+)/` \|", DOC.read_text(), re.M)
    return {room: int(floor) for floor, room in rows}


FLOORS = floors()


def floor_of(module: str) -> int:
    if module in FACE or module in ALIASES:
        return 99
    if module == "grpo_core.hookspecs":
        return 0
    return FLOORS[module.split(".")[1]]


def targets(node) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("grpo_core"):
        return [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module for a in node.names]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("grpo_core")]
    return []


def imports() -> list[tuple[str, str, bool]]:
    """(importer, imported, inside a function) for every grpo_core import."""
    out = []
    for name, tree in MODULES.items():
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inner = {id(n) for f in functions for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                out.append((name, f"relative import (level {node.level})", False))
            for t in targets(node):
                out.append((name, t, id(node) in inner))
    return out


EDGES = imports()


def test_every_room_is_on_the_architecture_page():
    rooms = sorted(p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert sorted(FLOORS) == rooms


def test_each_room_imports_only_its_own_room_and_the_floors_below():
    bad = [f"{a} -> {b}" for a, b, _ in EDGES if a not in FACE and a not in ALIASES
           and (b.startswith("relative") or b in FACE or floor_of(b) > floor_of(a)
                or (floor_of(b) == floor_of(a) and a.split(".")[:2] != b.split(".")[:2] and b != "grpo_core.hookspecs"))]
    assert bad == []


def test_no_import_cycles_counting_imports_inside_functions():
    graph: dict[str, set[str]] = {}
    for a, b, _ in EDGES:
        if a != b:
            graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}
    cycles = []

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def heavy(module: str, seen: frozenset = frozenset()) -> bool:
    """Whether importing ``module`` loads a heavy library (at some module's top level)."""
    tree = MODULES.get(module)
    if tree is None or module in seen:
        return False
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [(node.module or "").split(".")[0]]
        if set(names) & HEAVY or any(heavy(t, seen | {module}) for t in targets(node)):
            return True
    return False


def test_imports_inside_functions_only_where_the_module_imported_is_heavy():
    lazy = [f"{a} -> {b}" for a, b, inside in EDGES if inside and a not in FACE and not heavy(b)]
    assert lazy == []


def reach(start: str) -> set[str]:
    """Every grpo_core module ``start`` imports, through any chain (imports inside functions too)."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in EDGES:
        graph.setdefault(a, set()).add(b)
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


# The commands that read a finished run read its files through runfiles/, never through the
# trainer that wrote them or run/ (which prepares a training run)
READERS = ["grpo_core.commands.view", "grpo_core.commands.rollouts"]


def test_the_run_folders_readers_import_neither_the_trainer_nor_run():
    for reader in READERS:
        bad = sorted(m for m in reach(reader) if m.split(".")[1:2] in (["trainer"], ["run"]))
        assert bad == [], f"{reader} reaches {bad}"
        assert any(m.startswith("grpo_core.runfiles") for m in reach(reader))
    eval_imports = {b for a, b, _ in EDGES if a == "grpo_core.commands.eval"}
    assert not eval_imports & {"grpo_core.trainer.rollout_log", "grpo_core.trainer.batch", "grpo_core.trainer.chain",
                                "grpo_core.run.outputs"}


def test_no_room_names_its_floor_in_a_docstring():
    """The floor is the table's (it moves when a room is added): a module docstring saying
    'Floor 6' was wrong after the next room."""
    stale = [m for m, tree in MODULES.items()
             if re.search(r"\bfloor \d+\b", ast.get_docstring(tree) or "", re.I)]
    assert stale == []


# The learning choices a config names by registry: each kind a folder of the trainer's room
CHOICES = {"grpo_core.trainer.methods": "trainer/methods/", "grpo_core.trainer.samplers": "trainer/samplers/"}


def test_learning_choices_live_in_the_trainers_room_and_are_reached_by_name():
    """Methods and prompt samplers are the trainer's, named on the architecture page; nothing
    outside trainer/ imports them (config/ checks a setting through the registry, the
    plugin manager loads each folder as a default plugin, by its name)."""
    from grpo_core.plugin.plugins import DEFAULT_PLUGINS

    text = DOC.read_text()
    for package, folder in CHOICES.items():
        assert package in MODULES and floor_of(package) == FLOORS["trainer"], package
        assert f"`{folder}`" in text and package in DEFAULT_PLUGINS
        outside = sorted(f"{a} -> {b}" for a, b, _ in EDGES if (b == package or b.startswith(package + "."))
                         and not a.startswith("grpo_core.trainer") and a not in ALIASES)
        assert outside == []


def own_classes(room: str) -> dict[str, list[str]]:
    """The classes defined in ``room`` (name -> its bases as written), exceptions and
    protocols left out (an exception hierarchy is how errors are caught)."""
    out = {}
    for name, tree in MODULES.items():
        if name.split(".")[1:2] == [room]:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(b) for b in node.bases]
                    if not any(b.endswith(("Error", "Failure", "Stalled", "Protocol", "Exception")) for b in bases):
                        out[node.name] = bases
    return out


def test_no_class_in_rewards_is_more_than_two_below_object():
    """rewards/policy.py was six guard classes with two diamonds (CheckGuard three below
    object): each guard is now one class with a policy piece beside it."""
    classes = own_classes("rewards")
    assert len(classes) > 20

    def depth(name: str) -> int:
        ours = [b for b in classes[name] if b in classes]
        return 1 + max((depth(b) for b in ours), default=0)

    assert {n: classes[n] for n in classes if len([b for b in classes[n] if b in classes]) > 1} == {}
    assert {n: depth(n) for n in classes if depth(n) > 2} == {}


def test_no_core_module_passes_400_lines():
    """A module past 400 lines holds two pieces a reader would name apart: move one into a
    module of its own (config/stages.py, run/step_line.py, plugin/hints.py were cut so)."""
    sizes = {p.relative_to(PKG).as_posix(): p.read_text().count("\n") for p in PKG.rglob("*.py")}
    assert {m: n for m, n in sizes.items() if n > 400} == {}


def test_no_feature_of_the_trainer_takes_the_trainer():
    """One batch goes down trainer/chain.py as a typed value (trainer/batch.py): the features
    see the batch and their own settings. Only trainer.py (TRL's subclass) holds the trainer;
    no other module of the room has a parameter that could be it."""
    taken = sorted(f"{name}.{fn.name}({arg.arg})" for name, tree in MODULES.items()
                   if name.startswith("grpo_core.trainer") and name != "grpo_core.trainer.trainer"
                   for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
                   if arg.arg == "trainer" or "Trainer" in ast.unparse(arg.annotation or ast.Constant(None)))
    assert taken == []
    chain = MODULES["grpo_core.trainer.chain"]
    steps = {fn.name: ast.unparse(fn.returns) for fn in ast.walk(chain)
             if isinstance(fn, ast.FunctionDef) and fn.name in ("batch", "advantages")}
    assert steps == {"batch": "Batch", "advantages": "Batch"}
