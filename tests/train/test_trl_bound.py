"""grpo relies on a few private names of TRL and transformers, all in
grpo_core.trainer.trainer: each must exist in the installed TRL, and a TRL outside the
versions tested is a clear error at start-up. Fast generation falls back."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from grpo_core.config.load import load_config

from .conftest import TINY


def test_every_private_name_grpo_uses_exists_in_the_installed_trl():
    """Methods are looked up on the class; attributes (set in __init__, some only with
    environments) in the source of TRL's trainer and transformers' Trainer."""
    import inspect

    import transformers.trainer
    import trl.trainer.grpo_trainer
    from trl import GRPOTrainer

    from grpo_core.trainer.trainer import PRIVATE

    source = inspect.getsource(trl.trainer.grpo_trainer) + inspect.getsource(transformers.trainer)
    missing = [name for name in PRIVATE if not hasattr(GRPOTrainer, name) and f"self.{name} =" not in source]
    assert missing == [], f"TRL {version('trl')} / transformers {version('transformers')} lack {missing}"


def test_the_check_would_name_a_missing_one(monkeypatch):
    from grpo_core.trainer import trainer

    monkeypatch.setattr(trainer, "PRIVATE", (*trainer.PRIVATE, "_renamed_in_the_next_trl"))
    with pytest.raises(AssertionError, match=r"TRL \d+\.\d+\.\d+ / transformers .* lack \['_renamed_in_the_next_trl'\]"):
        test_every_private_name_grpo_uses_exists_in_the_installed_trl()


@pytest.mark.parametrize("installed, ok", [("1.14.2", True), ("1.16.0", True), ("1.16.3", True), ("1.14.1", False),
                                           ("1.13.0", False), ("1.17.0", False), ("1.17.0.dev0", False)])
def test_a_trl_outside_the_tested_versions_is_a_clear_error(monkeypatch, installed, ok):
    """The bounds docs/trl-versions.md's table measured: 1.14.2 and 1.16 pass, 1.15 fails."""
    import importlib.metadata

    from grpo_core.errors import ConfigError
    from grpo_core.run.prepare import check_versions

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: installed if d == "trl" else real(d))
    if ok:
        check_versions()
    else:
        with pytest.raises(ConfigError) as info:
            check_versions()
        assert str(info.value) == (f"trl {installed} is installed; grpo is tested with trl>=1.14.2,!=1.15.*,<1.17 and "
                                   f"relies on its internals: pip install 'trl>=1.14.2,!=1.15.*,<1.17'.")


@pytest.mark.parametrize("installed", ["1.15.0", "1.15.2"])
def test_a_trl_minor_that_failed_inside_the_bounds_is_refused_with_why(monkeypatch, installed):
    import importlib.metadata

    from grpo_core.errors import ConfigError
    from grpo_core.run.prepare import check_versions

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: installed if d == "trl" else real(d))
    with pytest.raises(ConfigError) as info:
        check_versions()
    assert str(info.value) == (f"trl {installed} is installed; grpo is tested with trl>=1.14.2,!=1.15.*,<1.17 (TRL "
                               f"1.15's own GRPOTrainer fails on torch's CPU build (its fused log-probabilities need "
                               f"Triton)) and relies on its internals: pip install 'trl>=1.14.2,!=1.15.*,<1.17'.")


def test_when_compiling_fails_sampling_goes_on_eagerly_with_one_warning(toy_plugin, tiny_model, tmp_path,
                                                                      monkeypatch):
    """Forced: the compiled decoder gets a backend torch does not have."""
    from grpo_core.run import train
    from grpo_core.trainer import decoding
    real = decoding.enable_fast_generation
    monkeypatch.setattr(decoding, "enable_fast_generation", lambda config, backend=None: real(config, backend="nope"))
    made, logged = [], []
    real_make = train._make_trainer
    monkeypatch.setattr(train, "_make_trainer", lambda *a, **k: made.append(real_make(*a, **k)) or made[-1])
    cfg = load_config(TINY, ["--model.id", str(tiny_model), "--model.fast_generation", "true",
                             "--max_steps", "2", "--output_dir", str(tmp_path / "o")])
    assert train.run(cfg, log=logged.append).global_step == 2
    warnings = [m for m in logged if "fast generation (static cache, compiled decoding) failed" in m]
    assert len(warnings) == 1 and "model.fast_generation: false" in warnings[0]
    g = made[0].generation_config
    assert g.cache_implementation is None and g.disable_compile is True and not made[0].sampler.fast


def test_preflight_and_eval_sampling_fall_back_too(tiny_model, capsys):
    from grpo_core.trainer.generation import generate, load_policy

    model, tok = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    prompts = [[{"role": "user", "content": "What is 2 + 2?"}]]
    eager = generate(model, tok, prompts, n=1, max_new_tokens=4, do_sample=False, fast=False)
    fallen = generate(model, tok, prompts, n=1, max_new_tokens=4, do_sample=False, fast="nope")
    assert [g[0].token_ids for g in fallen] == [g[0].token_ids for g in eager]
    assert capsys.readouterr().err.count("sampling eagerly from now on") == 1
