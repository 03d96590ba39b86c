"""The dtype decision (weights, trainable parameters, compute) for every device
and setting, and what a run loads and trains with on a CPU."""

from __future__ import annotations

import pytest

from grpo_core.config.precision import Precision, choose, normalize_dtype, sampling_autocast
from grpo_core.errors import ConfigError

from .conftest import TINY

F32, BF16, FP16 = "float32", "bfloat16", "float16"


@pytest.mark.parametrize(
    "device, dtype, bf16, fp16, lora, expected",
    [
        # CUDA, the defaults (bf16 autocast): float32 trainable weights
        ("cuda", "auto", True, False, True, (BF16, F32, BF16)),  # frozen base in bf16, adapters fp32
        ("cuda", "auto", True, False, False, (F32, F32, BF16)),  # full fine-tune: fp32 master weights
        ("cuda", "auto", False, True, True, (FP16, F32, FP16)),
        # bf16: false really is float32 compute, whatever the device supports
        ("cuda", "auto", False, False, True, (F32, F32, None)),
        ("cuda", "auto", False, False, False, (F32, F32, None)),
        # pure low precision only when asked for
        ("cuda", "bfloat16", True, False, True, (BF16, BF16, BF16)),
        ("cuda", "bfloat16", True, False, False, (BF16, BF16, BF16)),
        ("cuda", "float32", True, False, True, (F32, F32, BF16)),
        # CPU: float32 weights; bf16 autocast only when set
        ("cpu", "auto", False, False, True, (F32, F32, None)),
        ("cpu", "auto", True, False, True, (F32, F32, BF16)),
        ("cpu", "bfloat16", False, False, False, (BF16, BF16, None)),
        ("mps", "auto", False, False, True, (F32, F32, None)),
    ],
)
def test_choose(device, dtype, bf16, fp16, lora, expected):
    p = choose(device, dtype=dtype, bf16=bf16, fp16=fp16, lora=lora)
    assert (p.load, p.trainable, p.autocast) == expected


def test_describe_names_weight_and_compute_dtypes():
    p = Precision(load=BF16, trainable=F32, autocast=BF16)
    assert p.describe(lora=True) == "weights bfloat16 (frozen), adapters float32, compute bfloat16 autocast"
    assert Precision(F32, F32, None).describe(lora=False) == "weights float32, compute float32"


def test_dtype_names_and_errors():
    assert normalize_dtype("bf16") == BF16 and normalize_dtype("torch.float32") == F32
    assert normalize_dtype(None) == "auto"
    with pytest.raises(ConfigError, match="model.dtype 'int8' is not one of auto, float32, bfloat16, float16"):
        normalize_dtype("int8")
    with pytest.raises(ConfigError, match="bf16 and fp16 are both true"):
        choose("cuda", bf16=True, fp16=True)


def test_a_cpu_run_loads_and_trains_in_float32_and_says_so(grpo):
    code, out, err = grpo(TINY, "--max_steps", "1", "--model.dtype", "auto")
    assert code == 0, err
    assert "weights float32 (frozen), adapters float32, compute float32," in out  # (then the prompt sharing: model.shared_prompt)


def test_pure_bf16_casts_the_adapters_too(grpo, tmp_path):
    from safetensors.torch import load_file

    code, out, err = grpo(TINY, "--max_steps", "1", "--model.dtype", "bf16")
    assert code == 0, err
    assert "weights bfloat16 (frozen), adapters bfloat16" in out
    weights = load_file(str(tmp_path / "out" / "adapter" / "adapter_model.safetensors"))
    assert {str(v.dtype) for v in weights.values()} == {"torch.bfloat16"}


def test_sampling_autocast_on_cuda_over_low_precision_weights_on_a_cpu_under_bf16():
    lora = choose("cuda", bf16=True, lora=True)  # bf16 base, float32 adapters
    full = choose("cuda", bf16=True, lora=False)  # float32 weights
    assert sampling_autocast(lora, "cuda") == BF16
    assert sampling_autocast(full, "cuda") is None  # a static cache needs one dtype for keys and values
    assert sampling_autocast(choose("cuda", dtype="bfloat16", bf16=True), "cuda") == BF16
    assert sampling_autocast(choose("cuda", bf16=False, lora=True), "cuda") is None
    # a CPU: float32 weights (LoRA or not) sample under bf16 autocast when bf16 is set, as the step trains
    assert sampling_autocast(choose("cpu", bf16=True, lora=True), "cpu") == BF16
    assert sampling_autocast(choose("cpu", bf16=True, lora=False), "cpu") == BF16
    assert sampling_autocast(choose("cpu", bf16=True, lora=True), "cpu", static_cache=True) is None
    assert sampling_autocast(choose("cpu", fp16=True, lora=True), "cpu") is None  # float16 matmuls: slow on CPUs
    assert sampling_autocast(choose("cpu", lora=True), "cpu") is None
    assert sampling_autocast(choose("mps", bf16=True, lora=True), "mps") is None
