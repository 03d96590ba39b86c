"""Which dtypes a run trains in, decided in one place.

The rule (what a careful TRL user would set by hand):

- Trainable parameters (LoRA adapters, or every weight of a full fine-tune) are
  float32; the matrix work runs under bf16 (or fp16) autocast when ``bf16``
  (``fp16``) is on. Small updates to bf16 weights round away and bf16 weights
  drift into NaN; float32 master weights do not.
- A LoRA run loads its frozen base in bf16 when autocast is bf16 anyway: half
  the memory, same numerics.
- ``model.dtype: bfloat16`` (or ``float16``) asks for pure low precision: every
  weight, adapters included, in that dtype.
- ``bf16: false`` (and no fp16) means float32 compute and float32 weights.

No torch import: the decision is a pure function, tested for every device and
setting without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_core.base.errors import ConfigError

DTYPES = ("auto", "float32", "bfloat16", "float16")
_ALIASES = {"fp32": "float32", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


@dataclass(frozen=True)
class Precision:
    load: str  # dtype the weights are loaded in
    trainable: str  # dtype of the parameters the optimizer updates
    autocast: str | None  # "bfloat16" / "float16" under autocast, None: no autocast

    @property
    def compute(self) -> str:
        return f"{self.autocast} autocast" if self.autocast else self.load

    def describe(self, lora: bool) -> str:
        """``weights bfloat16 (frozen), adapters float32, compute bfloat16 autocast``"""
        if lora:
            return f"weights {self.load} (frozen), adapters {self.trainable}, compute {self.compute}"
        return f"weights {self.trainable}, compute {self.compute}"


def sampling_autocast(precision: Precision | None, device: str, static_cache: bool = False) -> str | None:
    """The autocast dtype to sample under, or None.

    On CUDA only when the weights are already in the autocast dtype (a LoRA base,
    pure bf16): then autocast just brings the float32 adapters along. float32
    weights (a full fine-tune) sample in float32 there: under autocast their
    rotary-embedded keys stay float32 while values turn bf16, and a static KV cache
    (fast generation) holds one dtype for both (seen on an H100: index_copy_ dtype
    error).

    On a CPU under bf16 autocast (``bf16: true`` set there), sampling runs under it
    too unless a static cache is in use: decoding there is bound by reading the
    weights, and bf16 matrix products read half as much (the training step already
    runs its products in bf16, so the sampled policy is the one trained).
    """
    if precision is None or not precision.autocast:
        return None
    if device == "cpu":
        return "bfloat16" if precision.autocast == "bfloat16" and not static_cache else None
    if device != "cuda":
        return None
    return precision.autocast if precision.load == precision.autocast else None


# why each precision sampling.precision names but grpo does not sample in is refused
REFUSED = {
    ("int8", "cpu"): "torch's int8 weight-only product (_weight_int8pack_mm) took 5.8-19x float32's time on "
                     "SmolLM2-135M's shapes, and dynamic int8 quantization sampled 1.0 nat per token away from "
                     "float32 (docs/cpu.md)",
    ("fp8", "cpu"): "no CPU kernel multiplies fp8 matrices faster than bfloat16",
}


def sampling_precision(setting: str, device: str, *, cpu_bf16: bool = True, vllm: bool = False) -> str | None:
    """The dtype training samples in (``sampling.precision``), or None: as the model is.

    ``auto`` is bfloat16 on a CPU with bfloat16 instructions (``cpu_bf16``: AVX-512 BF16
    or AMX, where a bf16 product is 2-4x a float32 one), else as the model is (on CUDA a
    LoRA base under bf16 already samples in bf16, adapters under autocast). int8 and fp8
    are refused with the reason; so is any precision but auto with vLLM, which samples
    in its own."""
    setting = _ALIASES.get(str(setting).strip().lower(), str(setting).strip().lower())
    if setting == "auto":
        return "bfloat16" if device == "cpu" and cpu_bf16 and not vllm else None
    if setting == "float32":
        return None
    if vllm:
        raise ConfigError(f"sampling.precision: {setting} does not apply with use_vllm: true (vLLM samples in its "
                          f"own precision: its quantization setting); remove sampling.precision or set it to auto.")
    if setting == "bfloat16":
        return "bfloat16"
    if setting in ("int8", "fp8"):
        why = REFUSED.get((setting, device), f"no {setting} sampling kernel has been measured on {device} yet")
        raise ConfigError(f"sampling.precision: {setting} is not supported on {device}: {why}. Use bf16 (or "
                          f"float32).")
    raise ConfigError(f"sampling.precision {setting!r} is not one of auto, float32, bf16, int8, fp8.")


def normalize_dtype(dtype: object) -> str:
    """``model.dtype`` as one of :data:`DTYPES`, or a ConfigError naming the choices."""
    text = "auto" if dtype is None else str(dtype).strip().lower().removeprefix("torch.")
    text = _ALIASES.get(text, text)
    if text not in DTYPES:
        raise ConfigError(f"model.dtype {dtype!r} is not one of {', '.join(DTYPES)}.")
    return text


def choose(device: str, *, dtype: object = "auto", bf16: bool = False, fp16: bool = False,
           lora: bool = False) -> Precision:
    """The dtypes for a run on ``device`` with GRPOConfig's resolved ``bf16``/``fp16``."""
    dtype = normalize_dtype(dtype)
    if bf16 and fp16:
        raise ConfigError("bf16 and fp16 are both true; pick one (bf16 on GPUs that support it).")
    autocast = "bfloat16" if bf16 else "float16" if fp16 else None
    if dtype in ("bfloat16", "float16"):  # asked for pure low precision
        return Precision(load=dtype, trainable=dtype, autocast=autocast)
    if dtype == "float32" or autocast is None or device == "cpu" or not lora:
        return Precision(load="float32", trainable="float32", autocast=autocast)
    # LoRA under autocast: the frozen base in the autocast dtype, adapters float32
    return Precision(load=autocast, trainable="float32", autocast=autocast)


__all__ = ["Precision", "choose", "normalize_dtype", "sampling_autocast", "sampling_precision", "DTYPES", "REFUSED"]
