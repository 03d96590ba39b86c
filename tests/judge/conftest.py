"""Fixtures for the judge rewards: a real OpenAI-compatible server (``transformers serve``) on a
tiny judge model built here, fake judges of the tests' own (``grpo_rewards_judge.testing``), the
plugin registered in-process and a cache folder per test.

The tiny judge is a bigram model (a Llama: transformers serve parses Qwen answers with a
response template of its own, which a chat template like this one confuses): attention and MLP outputs are zero, so the residual stream
is the current token's one-hot embedding and the head maps each token to the next one. Its
chat template only joins the messages' text, so a test template that ends with
``{completion}`` makes the judge's answer a function of the completion's last character:

    ...!  -> "yes"      ...~  -> "no"      ...|  -> "?" (unreadable)
    ...@  -> "7"        ...%  -> "10"      ...^  -> "A"      ...&  -> "B"

and any other last token -> "yes" or "no" (even or odd token id). Deterministic, no download.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import grpo_rewards_judge
from grpo_rewards_judge import ask

CHAINS = {"!": "yes", "~": "no", "|": "?", "@": "7", "%": "10", "^": "A", "&": "B"}
# a template whose last field is the completion: the judge answers from its last character
LAST = "{prompt}\n{reference}\n{completion}"


def make_judge_model(path: Path) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from grpo_core.testing import make_tokenizer

    tok = make_tokenizer()
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    vocab, eos = len(tok), tok.eos_token_id
    hidden = (vocab + 7) // 8 * 8

    def one(text: str) -> int:
        ids = tok.encode(text, add_special_tokens=False)
        assert len(ids) == 1, (text, ids)
        return ids[0]

    yes, no = one("y"), one("n")
    nxt = {t: (yes if t % 2 == 0 else no) for t in range(vocab)}  # the next token after each token
    for trigger, answer in CHAINS.items():
        ids = [one(ch) for ch in trigger + answer]
        for a, b in zip(ids, ids[1:]):
            nxt[a] = b
        nxt[ids[-1]] = eos
    for trigger, answer in CHAINS.items():  # the chains do not cross
        walk, t = [], one(trigger)
        while nxt[t] != eos:
            t = nxt[t]
            walk.append(t)
        assert tok.decode(walk) == answer, (trigger, tok.decode(walk))
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=8, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=65536,
                         tie_word_embeddings=False, eos_token_id=eos, pad_token_id=tok.pad_token_id, bos_token_id=None)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.model.embed_tokens.weight[torch.arange(vocab), torch.arange(vocab)] = 1.0
        model.model.norm.weight.fill_(1.0)
        for t, target in nxt.items():
            model.lm_head.weight[target, t] = 30.0
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A running ``transformers serve``: its /v1 url, the model's name, its log."""

    def __init__(self, url: str, model: str, log: Path):
        self.url, self.model, self.log = url, model, log

    def chat_requests(self) -> int:
        """Chat completion requests answered so far, from uvicorn's access log (the
        server's own count, not the client's)."""
        return len(re.findall(r'"POST /v1/chat/completions HTTP/1.1" 200', self.log.read_text(errors="replace")))


@pytest.fixture(scope="session")
def judge_model(tmp_path_factory) -> Path:
    return make_judge_model(tmp_path_factory.mktemp("judge") / "bigram-judge")


@pytest.fixture(scope="session")
def served_judge(judge_model, tmp_path_factory):
    """``transformers serve`` on the tiny judge, bound to 127.0.0.1 (skipped without
    transformers[serving]: scripts/setup.sh installs it)."""
    pytest.importorskip("fastapi", reason="transformers[serving] is not installed (scripts/setup.sh installs it)")
    exe = shutil.which("transformers", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the transformers command is not installed")
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "serve", str(judge_model), "--host", "127.0.0.1", "--port", str(port),
                                 "--device", "cpu", "--log-level", "info", "--default-seed", "0"],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Served(f"http://127.0.0.1:{port}/v1", str(judge_model), log)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def judge_plugin(register_plugin, tmp_path, monkeypatch):
    """The plugin registered in-process, a cache folder of the test's own, no warning or
    recheck carried over from another test."""
    monkeypatch.setenv("GRPO_JUDGE_CACHE", str(tmp_path / "judge-cache"))
    ask.reset()
    register_plugin(grpo_rewards_judge)
    yield grpo_rewards_judge
    ask.reset()


def chat(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def asked(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]
