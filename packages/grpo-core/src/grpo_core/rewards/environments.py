"""Environments and tools by name: tool-using, multi-turn rollouts on TRL.

A plugin registers ``register(name, factory)``; ``factory(**params)`` returns what
TRL's ``environment_factory`` takes: a class (or a zero-argument callable making
instances) with ``reset(**row)``, public methods as the model's tools and an
optional ``get_reward()``. A class registered directly is its own factory (its
``__init__`` keywords are the parameters).

A config names one environment for every row (``environment: python``,
``environment: "guess_number(max_guesses=5):2.0"``, or a mapping with ``name``,
``params`` and ``weight``), or one per row, chosen by the dataset's
``environment`` column as TRL's dict form does (``environment: {math: python,
game: guess_number}``; a route cannot be called ``name`` or ``params``). ``tools:`` adds plain tool
functions: a registered environment's tools (one shared instance, never reset),
``file.py:func`` or ``module.func``.

Everything that needs no tokenizer is checked when the config is read: names
(with suggestions), parameters, the environment's shape and the dataset columns
its ``reset`` needs. :func:`grpo_core.rewards.tool_support.check_support`
(transformers, the chat template, the tools' schemas) runs on the tokenizer, still
before any model loads. Importing this module is cheap.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from grpo_core.base.errors import ConfigError, RewardParamError, SpecError
from grpo_core.base.params import bind_params, split_signature
from grpo_core.plugin import registry
from grpo_core.rewards import local_rewards
from grpo_core.rewards.specs import EnvironmentSpec
from grpo_core.rewards.specs import parse_environment as parse_spec

COLUMN = "environment"  # the dataset column that picks a row's environment (TRL's dict form)


@dataclass
class Environment:
    """A registered environment bound to its parameters."""

    spec: EnvironmentSpec
    entry: registry.Entry
    factory: Callable[[], Any]  # what TRL's environment_factory gets: each call, a fresh instance
    cls: type[Any]  # the instances' class: its tools and get_reward are read off it
    tools: tuple[str, ...]
    has_reward: bool
    columns: tuple[str, ...]  # dataset columns its reset() needs

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def weight(self) -> float:
        return 1.0 if self.spec.weight is None else self.spec.weight


@dataclass
class Tool:
    """A plain tool function and how the config named it."""

    ref: str
    func: Callable


@dataclass
class EnvironmentSection:
    """The config's ``environment`` and ``tools``."""

    routes: dict[str | None, Environment]  # None: one environment for every row
    tools: list[Tool] = field(default_factory=list)
    raw_environment: Any = None  # as written, for config.yaml
    raw_tools: list = field(default_factory=list)

    @property
    def routed(self) -> bool:
        return None not in self.routes and bool(self.routes)

    @property
    def rewarded(self) -> list[Environment]:
        """Environments that score rollouts themselves (``get_reward``), once per name."""
        out: dict[str, Environment] = {}
        for env in self.routes.values():
            if env.has_reward:
                out.setdefault(env.name, env)
        return list(out.values())

    def tool_names(self) -> list[str]:
        names = [t.func.__name__ for t in self.tools]
        for env in self.routes.values():
            names += [n for n in env.tools if n not in names]
        return names

    def as_config(self) -> dict:
        out: dict[str, Any] = {}
        if self.raw_environment is not None:
            out["environment"] = self.raw_environment
        if self.raw_tools:
            out["tools"] = list(self.raw_tools)
        return out


# --------------------------------------------------------------------------- registry


def list_environments() -> list[registry.Entry]:
    """Every registered environment, sorted by name."""
    reg = registry.environments()
    return [reg.entries[n] for n in reg.names()]


def get_environment(name: str, **params: Any) -> Environment:
    """The environment registered as ``name``, bound to ``params`` and checked."""
    return resolve(EnvironmentSpec(name, dict(params)))


# --------------------------------------------------------------------------- specs


# --------------------------------------------------------------------------- resolving


def resolve(spec: EnvironmentSpec) -> Environment:
    """Bind the spec to its registered factory; check what TRL will rely on."""
    entry = registry.environments().get(spec.name)  # unknown names fail here, with suggestions
    obj, owner = entry.obj, f"environment '{spec}'"
    if spec.weight is not None and not math.isfinite(spec.weight):
        raise ConfigError(f"{owner}: its weight must be finite, got {spec.weight}.")
    try:
        if inspect.isclass(obj):  # a class registered as its own factory
            _bind(owner, obj.__init__, spec.params)
            factory = functools.partial(obj, **spec.params) if spec.params else obj
        else:
            _bind(owner, obj, spec.params)
            factory = obj(**spec.params)
    except RewardParamError as exc:
        raise ConfigError(str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{owner} rejects its parameters: {exc}") from None
    if not callable(factory):
        raise ConfigError(f"{owner}: its factory returned {factory!r:.80}, not a class or a callable that makes "
                          f"environments ({entry.source}).")
    cls = factory if inspect.isclass(factory) else _probe_class(owner, factory, entry)
    env = Environment(spec, entry, factory, cls, *_shape(owner, cls, entry))
    if spec.weight is not None and not env.has_reward:
        raise ConfigError(f"{owner} has no get_reward(), so a weight means nothing; drop ':{spec.weight:g}' "
                          f"(score it with rewards instead).")
    return env


def _bind(owner: str, func: Callable, params: dict) -> None:
    bind_params(owner, func, params)
    required = [n for n in split_signature(func)[1] if n != "self"]
    if required:
        raise ConfigError(f"{owner}: {', '.join(required)} must have defaults: TRL makes each environment "
                          f"with no arguments (fix the plugin's factory).")


def _probe_class(owner: str, factory: Callable, entry: registry.Entry) -> type:
    """The class of the instances a non-class factory makes (TRL probes one, too)."""
    try:
        return type(factory())
    except Exception as exc:  # a plugin's bug, reported with its source
        raise ConfigError(f"{owner}: making an instance failed ({entry.source}): {type(exc).__name__}: {exc}") from None


def _shape(owner: str, cls: type, entry: registry.Entry) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    """(tool names, has get_reward, columns reset needs), read as TRL reads them."""

    members = dict(inspect.getmembers(cls, predicate=inspect.isfunction))
    if "reset" not in members:
        raise ConfigError(f"{owner}: {cls.__name__} has no reset(**row) method, which TRL calls before each "
                          f"rollout ({entry.source}).")
    tools = tuple(n for n in members if n not in ("reset", "get_reward") and not n.startswith("_"))
    _, required, _ = split_signature(members["reset"])
    return tools, "get_reward" in members, tuple(n for n in required if n != "self")


# --------------------------------------------------------------------------- the config section


def parse_section(environment: Any, tools: Any) -> EnvironmentSection | None:
    """The config's ``environment`` and ``tools``, resolved and checked (None when neither is set)."""
    if environment in (None, False, {}, "") and not tools:
        return None
    routes: dict[str | None, Environment] = {}
    if isinstance(environment, dict) and not ({"name", "params"} & set(environment)):
        if not environment:
            raise ConfigError("environment: an empty mapping; name an environment, e.g. environment: python.")
        for route, value in environment.items():
            routes[str(route)] = resolve(parse_spec(value, f"environment.{route}"))
        _check_shared_classes(routes)
    elif environment not in (None, False, "", {}):
        routes[None] = resolve(parse_spec(environment, "environment"))
    section = EnvironmentSection(routes, _tools(tools), environment or None, _tool_refs(tools))
    _check_tool_names(section)
    return section


def _check_shared_classes(routes: dict[str | None, Environment]) -> None:
    """TRL scores one class in one reward column: routes sharing it must agree on the weight."""
    by_class: dict[type, tuple[str | None, Environment]] = {}
    for route, env in routes.items():
        if not env.has_reward:
            continue
        first = by_class.setdefault(env.cls, (route, env))
        if first[1].weight != env.weight or first[1].name != env.name:
            raise ConfigError(
                f"environment routes '{first[0]}' ({first[1].spec}) and '{route}' ({env.spec}) share the class "
                f"{env.cls.__name__}, which TRL scores in one reward column; give them the same name and weight.")


def _tool_refs(tools: Any) -> list[str]:
    if tools in (None, False):
        return []
    if isinstance(tools, str):
        tools = [tools]
    if not isinstance(tools, list) or not all(isinstance(t, str) and t.strip() for t in tools):
        raise ConfigError(f"tools must be a list of tool references (a registered environment such as python, "
                          f"my_tools.py:add or my_lib.tools.search), got {tools!r}.")
    return [t.strip() for t in tools]


def _tools(tools: Any) -> list[Tool]:
    out: list[Tool] = []
    for ref in _tool_refs(tools):
        out += _resolve_tool(ref)
    return out


def _resolve_tool(ref: str) -> list[Tool]:
    if registry.NAME_RE.match(ref) and (ref in registry.environments() or not local_rewards.IMPORT_PATH_RE.match(ref)):
        env = resolve(parse_spec(ref, f"tools: {ref}"))
        if env.columns:
            raise ConfigError(f"tools: environment '{ref}' needs dataset columns to reset ({', '.join(env.columns)}), "
                              f"so it cannot serve as plain tools; name it under environment: instead.")
        instance = env.factory()
        instance.reset()
        return [Tool(ref, getattr(instance, name)) for name in env.tools]
    if not (local_rewards.is_local_ref(ref) or local_rewards.IMPORT_PATH_RE.match(ref)):
        raise ConfigError(f"tools: {ref!r} is neither a registered environment (`grpo envs list`) nor a function "
                          f"(my_tools.py:add or my_lib.tools.search).")
    try:
        func = local_rewards.load(ref, kind="tool")
    except SpecError as exc:
        raise ConfigError(str(exc)) from None
    return [Tool(ref, func)]


def _check_tool_names(section: EnvironmentSection) -> None:
    """The model calls tools by name: two with one name would be ambiguous."""
    owner: dict[str, str] = {}
    for tool in section.tools:
        name = tool.func.__name__
        if name in owner:
            raise ConfigError(f"tools: '{name}' comes from both {owner[name]} and {tool.ref}; the model calls tools "
                              f"by name, so keep one.")
        owner[name] = tool.ref
    for env in section.routes.values():
        for name in env.tools:
            if name in owner:
                raise ConfigError(f"tool '{name}' comes from both {owner[name]} (tools) and environment "
                                  f"'{env.name}'; the model calls tools by name, so keep one.")


def check_columns(columns: list[str], section: EnvironmentSection | None, dataset: str, values=None) -> None:
    """The dataset has what the environments need: the ``environment`` column (its
    values among the routes) for the dict form, and what each ``reset`` reads."""
    if section is None:
        return
    if section.routed:
        if COLUMN not in columns:
            raise ConfigError(
                f"environment maps names to environments ({', '.join(map(str, section.routes))}), which picks each "
                f"row's environment by the dataset's '{COLUMN}' column, and {dataset} has none (columns: "
                f"{', '.join(columns)}). Add the column, or name one environment for every row.")
        seen = set(values() if values else [])
        if any(not isinstance(v, str) for v in seen):
            raise ConfigError(f"{dataset}: its '{COLUMN}' column must hold environment names (text), got "
                              f"{', '.join(sorted(repr(v) for v in seen if not isinstance(v, str))[:5])}.")
        unknown = sorted(seen - set(section.routes))
        if unknown:
            raise ConfigError(f"{dataset}: its '{COLUMN}' column names {', '.join(map(repr, unknown))}, which "
                              f"environment does not map; it maps {', '.join(map(repr, section.routes))}.")
    for env in section.routes.values():
        missing = [c for c in env.columns if c not in columns]
        if missing:
            raise ConfigError(f"environment '{env.spec}' resets from the dataset's {', '.join(missing)} column(s), "
                              f"which {dataset} lacks (columns: {', '.join(columns)}).")


# --------------------------------------------------------------------------- TRL's keywords


def trainer_kwargs(section: EnvironmentSection | None) -> dict:
    """``GrpoTrainer`` keywords: TRL's ``tools`` and ``environment_factory``, and how to
    name and weigh each environment's ``get_reward`` column."""
    if section is None:
        return {}
    out: dict[str, Any] = {"tools": [t.func for t in section.tools] or None}
    if section.routes:
        factories = {route: env.factory for route, env in section.routes.items()}
        out["environment_factory"] = factories[None] if None in factories else factories
        out["environment_rewards"] = {route: (env.name, env.weight) for route, env in section.routes.items()
                                      if env.has_reward}
    return out


# --------------------------------------------------------------------------- showing rollouts


def transcript(completion: Any, limit: int = 200) -> str:
    """One line for a multi-turn completion: the assistant's text, each tool call as
    ``[call: name(arg=value)]`` and each result as ``[result: text]``."""
    if isinstance(completion, str):
        return completion
    parts = []
    for message in completion or ():
        role = message.get("role")
        if role == "tool":
            parts.append(f"[result: {_clip(str(message.get('content', '')), limit)}]")
            continue
        if message.get("content"):
            parts.append(str(message["content"]) if isinstance(message["content"], str) else
                         " ".join(p.get("text", "") for p in message["content"] if isinstance(p, dict)))
        for call in message.get("tool_calls") or ():
            fn = call.get("function", call)
            args = fn.get("arguments", {})
            shown = ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else repr(args)
            parts.append(f"[call: {fn.get('name', '?')}({_clip(shown, limit)})]")
    return " ".join(p for p in parts if p)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def count_tool_calls(completion: Any) -> int:
    if isinstance(completion, str):
        return 0
    return sum(len(m.get("tool_calls") or ()) for m in completion or () if isinstance(m, dict))


__all__ = ["Environment", "EnvironmentSpec", "EnvironmentSection", "Tool", "list_environments", "get_environment",
           "parse_spec", "parse_section", "resolve", "check_columns", "trainer_kwargs",
           "transcript", "count_tool_calls", "COLUMN"]
