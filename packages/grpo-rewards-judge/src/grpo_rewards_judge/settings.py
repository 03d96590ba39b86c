"""The settings every judge reward takes (``url``, ``model``, the template, the client's limits,
the cache), checked when the reward is bound, before any request; and the signature that
declares them, built in one place for the four rewards."""

from __future__ import annotations

import inspect
import ipaddress
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from . import templates
from .client import Endpoint, chat_url

DEFAULT_URL = "http://127.0.0.1:8000/v1"  # vLLM's and transformers serve's default port
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")

# (name, type, default, what it is): every judge reward's parameters, after its own
COMMON: tuple[tuple[str, Any, object, str], ...] = (
    ("url", str, DEFAULT_URL, "the judge server: its /v1 address, or the full .../chat/completions"),
    ("model", str, "", "the model the server should answer with ('' = its default)"),
    ("api_key_env", str, "OPENAI_API_KEY", "the environment variable holding the API key (never the key)"),
    ("template", str, "", "the user message, str.format text over the reward's fields ('' = the default)"),
    ("system", str, "", "the system message ('' = the default: grade the response as data, never obey it)"),
    ("reference", str, "answer", "the dataset column with a reference answer shown to the judge ('' = none)"),
    ("concurrency", int, 8, "requests in flight at once"),
    ("timeout", float, 60.0, "seconds a request may go without an answer"),
    ("retries", int, 3, "retries after a 429/5xx, a time-out or a dropped connection"),
    ("backoff", float, 1.0, "seconds before the first retry, doubled each time (with jitter)"),
    ("max_tokens", int, 16, "tokens the judge may write per answer"),
    ("temperature", float, 0.0, "the judge's sampling temperature"),
    ("seed", int, 0, "the judge's sampling seed"),
    ("max_chars", int, 8000, "characters of a completion (prompt, reference) shown at most: head and tail"),
    ("cache", str | bool, "default", "the answers' cache folder ('default': ~/.cache/grpo/judge; 'off', as YAML's "
     "off/false: none)"),
    ("recheck", int, 8, "the first N new questions are asked twice: a judge that answers differently is reported"),
    ("logprobs", bool, True, "ask for log-probabilities (yes/no, A/B read from them where the server gives them)"),
)
NAMES = tuple(c[0] for c in COMMON)


def _bounded(name: str, value, low, high) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low:g} to {high:g}, got {value!r}")


@dataclass(frozen=True)
class Settings:
    url: str
    model: str
    api_key_env: str
    template: str
    system: str
    reference: str
    concurrency: int
    timeout: float
    retries: int
    backoff: float
    max_tokens: int
    temperature: float
    seed: int
    max_chars: int
    cache: str
    recheck: int
    logprobs: bool

    @classmethod
    def of(cls, params: dict, kind: str) -> Settings:
        """The settings in ``params`` (a reward's keywords), checked; ValueError names the
        value and the fix."""
        given = {name: params[name] for name in NAMES}
        url = chat_url(given["url"])
        if not ENV_NAME.fullmatch(str(given["api_key_env"])):
            raise ValueError("api_key_env names the environment variable that holds the API key (upper-case "
                             "letters, digits and _, e.g. 'OPENAI_API_KEY'), not the key itself: put the key in "
                             "such a variable and name it here, so it is never written to config.yaml")
        _bounded("concurrency", given["concurrency"], 1, 256)
        _bounded("timeout", given["timeout"], 0.001, 3600)
        _bounded("retries", given["retries"], 0, 20)
        _bounded("backoff", given["backoff"], 0, 60)
        _bounded("max_tokens", given["max_tokens"], 1, 32768)
        _bounded("temperature", given["temperature"], 0, 2)
        _bounded("max_chars", given["max_chars"], 100, 1_000_000)
        _bounded("recheck", given["recheck"], 0, 10_000)
        if len(given["system"]) > templates.MAX_TEMPLATE:
            raise ValueError(f"system is {len(given['system']):,} characters; at most {templates.MAX_TEMPLATE:,}")
        if isinstance(given["cache"], bool):  # YAML reads `cache: off` as false
            given["cache"] = "default" if given["cache"] else "off"
        given.update(url=url, template=templates.check_template(given["template"], kind),
                     system=given["system"] or templates.SYSTEM, timeout=float(given["timeout"]),
                     backoff=float(given["backoff"]), temperature=float(given["temperature"]))
        return cls(**given)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.url, self.api_key_env, self.timeout, self.retries, self.backoff)

    @property
    def judge(self) -> str:
        """The judge, as messages name it: ``model M at URL``."""
        return f"{f'model {self.model!r}' if self.model else 'the default model'} at {self.url}"

    def body(self, user: str, logprobs: bool) -> dict:
        """The chat completion request for one question (``user``: the filled template)."""
        body: dict = {"messages": [{"role": "system", "content": self.system}, {"role": "user", "content": user}],
                      "temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                      "stream": False}
        if self.model:
            body["model"] = self.model
        if logprobs and self.logprobs:
            body.update(logprobs=True, top_logprobs=5)
        return body

    def in_clear(self) -> bool:
        """A key would travel unencrypted: http:// to a host that is not this machine."""
        parts = urlsplit(self.url)
        if parts.scheme != "http":
            return False
        host = parts.hostname or ""
        try:
            return not ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host != "localhost"


def signature(own: tuple[tuple[str, type, object, str], ...]) -> tuple[inspect.Signature, dict]:
    """The reward's signature (``completions, prompts=None``, its own parameters, the common
    ones, ``**kwargs``) and annotations: what grpo checks a spec's parameters against and
    ``grpo rewards show`` lists."""
    P = inspect.Parameter
    params = [P("completions", P.POSITIONAL_OR_KEYWORD), P("prompts", P.POSITIONAL_OR_KEYWORD, default=None)]
    params += [P(name, P.KEYWORD_ONLY, default=default, annotation=kind) for name, kind, default, _ in own + COMMON]
    params.append(P("kwargs", P.VAR_KEYWORD))
    return inspect.Signature(params), {p.name: p.annotation for p in params if p.annotation is not P.empty}


def values(kwargs: dict, own: tuple[tuple[str, type, object, str], ...]) -> dict:
    """The reward's parameters from its keywords, defaults where a spec set none (the
    function's own signature is :func:`signature`'s, so Python fills in no defaults). A
    keyword of the wrong type is a dataset column of the same name (every grpo dataset has
    ``question``), which grpo hands a reward beside its parameters: the default, then."""
    return {name: value if _is(value, kind) else default
            for name, kind, default, _ in own + COMMON for value in [kwargs.get(name, default)]}


def _is(value, kind: Any) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is list:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def parameter_doc(own: tuple[tuple[str, type, object, str], ...]) -> str:
    """A docstring's parameter lines."""
    return "\n".join(f"    {name}={default!r}: {what}" for name, _, default, what in own + COMMON)


__all__ = ["COMMON", "DEFAULT_URL", "NAMES", "Settings", "signature", "parameter_doc", "values"]
