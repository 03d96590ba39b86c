"""Whether this transformers and this model's tokenizer can run tool-using rollouts:
what TRL would fail on only after the model loaded (transformers too old for
``environment_factory`` or ``tools``, a chat template that cannot render a tool call or
that TRL cannot read tool calls out of, a tool it cannot describe to the model).
:func:`check_support` runs on the tokenizer in ``run/prepare.py``, before any model loads;
transformers and TRL are imported inside it."""

from __future__ import annotations

from collections.abc import Callable

from grpo_core.base.errors import ConfigError
from grpo_core.rewards.environments import EnvironmentSection

MIN_TRANSFORMERS_ENV = "5.2.0"  # TRL 1.16: environment_factory
MIN_TRANSFORMERS_TOOLS = "5.0.0"  # TRL 1.16: tools
NO_JMESPATH_FROM = "5.13.0"  # older transformers parse tool calls with jmespath


def check_support(section: EnvironmentSection | None, tokenizer, model_id: str) -> None:
    """What TRL would fail on after the model loaded: transformers too old, a chat
    template that cannot render or parse tool calls, a tool it cannot describe."""
    if section is None:
        return
    _check_transformers(bool(section.routes))
    from transformers.utils import get_json_schema

    for name, func in _all_tools(section):
        try:
            get_json_schema(func)
        except Exception as exc:  # transformers' DocstringParsingException / TypeHintParsingException
            raise ConfigError(
                f"tool '{name}' cannot be described to the model: {exc} Give it type hints and a Google-style "
                f"docstring with an Args: line per parameter (docs/writing-plugins.md, register_environments).") from None
    _check_template(tokenizer, model_id)


def _all_tools(section: EnvironmentSection) -> list[tuple[str, Callable]]:
    out = [(t.func.__name__, t.func) for t in section.tools]
    for env in section.routes.values():
        out += [(f"{env.name}.{n}", getattr(env.cls, n)) for n in env.tools]
    return out


def _check_transformers(environments: bool) -> None:
    import importlib.util
    from importlib.metadata import version

    from packaging.version import Version

    have = Version(version("transformers"))
    need = MIN_TRANSFORMERS_ENV if environments else MIN_TRANSFORMERS_TOOLS
    if have < Version(need):
        what = "environments (TRL's environment_factory)" if environments else "tools"
        raise ConfigError(f"{what} need transformers >= {need}; this is {have}: pip install -U 'transformers>={need}'.")
    if have < Version(NO_JMESPATH_FROM) and importlib.util.find_spec("jmespath") is None:
        raise ConfigError(f"tool calls are parsed with jmespath on transformers {have} (< {NO_JMESPATH_FROM}): "
                          f"pip install jmespath, or upgrade transformers.")


def _check_template(tokenizer, model_id: str) -> None:
    import copy

    from trl.chat_template_utils import add_response_schema, supports_tool_calling

    if not supports_tool_calling(tokenizer):
        raise ConfigError(
            f"the chat template of {model_id} cannot render a tool-calling conversation (user -> assistant with "
            f"tool_calls -> tool): the model would never see its tools or their results. Use a model trained for "
            f"tool use whose template renders them (Qwen2.5/Qwen3 Instruct, Llama 3.1+), or drop environment/tools.")
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        try:
            add_response_schema(copy.copy(tokenizer))
        except ValueError:
            raise ConfigError(
                f"TRL cannot read tool calls out of {model_id}'s completions: its chat template is none TRL knows "
                f"(Qwen2.5, Qwen3, Llama 3.1/3.2, GPT-OSS, ...) and the tokenizer sets no response_template. Use such "
                f"a model, or save its tokenizer with a response_template (transformers' response-parsing docs).") from None


__all__ = ["check_support", "MIN_TRANSFORMERS_ENV", "MIN_TRANSFORMERS_TOOLS", "NO_JMESPATH_FROM"]
