"""The accelerate configs in examples/accelerate load in accelerate itself and say
what their names promise."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFIGS = Path(__file__).resolve().parents[2] / "examples" / "accelerate"

EXPECTED = {
    # file: (distributed type, processes, machines, ZeRO stage, FSDP version)
    "zero2.yaml": ("DEEPSPEED", 8, 1, 2, None),
    "zero3.yaml": ("DEEPSPEED", 8, 1, 3, None),
    "fsdp.yaml": ("FSDP", 8, 1, None, 2),
    "multinode-zero3.yaml": ("DEEPSPEED", 16, 2, 3, None),
    "cpu-2proc.yaml": ("MULTI_GPU", 2, 1, None, None),
}


def test_every_config_is_checked():
    assert {p.name for p in CONFIGS.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_loads_in_accelerate(name):
    from accelerate.commands.config.config_args import load_config_from_file

    cfg = load_config_from_file(str(CONFIGS / name))
    dtype, procs, machines, stage, fsdp = EXPECTED[name]
    assert cfg.distributed_type.value == dtype
    assert (cfg.num_processes, cfg.num_machines) == (procs, machines)
    assert (cfg.deepspeed_config or {}).get("zero_stage") == stage
    assert (cfg.fsdp_config or {}).get("fsdp_version") == fsdp
    # each file documents the command line that uses it
    assert f"accelerate launch --config_file examples/accelerate/{name}" in (CONFIGS / name).read_text()
