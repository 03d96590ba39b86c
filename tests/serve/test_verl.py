"""grpo's compute_score as verl loads and calls it: the same scores as `grpo score`."""

from __future__ import annotations

import importlib.util
import sys
from functools import partial

import pytest

from tests.serve.test_serve import SPECS, grpo_score, rows


def _verl_loads(reward_kwargs: dict):
    """What verl's get_custom_reward_fn does with custom_reward_function.path/name/reward_kwargs."""
    import grpo_core.serve.verl as ours

    spec = importlib.util.spec_from_file_location("custom_module", ours.__file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop("custom_module", None)
    raw_fn = module.compute_score

    def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
        return raw_fn(*args, **{**kwargs, **extra_kwargs})

    return partial(_call_with_kwargs, raw_fn, dict(reward_kwargs))


def test_compute_score_matches_grpo_score_one_item_and_batch(installed, tmp_path):
    data = rows(100)
    expected = grpo_score(tmp_path, data)
    fn = _verl_loads({"rewards": SPECS})
    # NaiveRewardManager: one call per item, keywords
    single = [fn(data_source="arithmetic", solution_str=r["completion"], ground_truth=r["answer"],
                 extra_info={"index": i, "question": r["prompt"]}) for i, r in enumerate(data)]
    assert [s["score"] for s in single] == [e["total"] for e in expected]
    assert [s["math.correctness"] for s in single] == [e["math.correctness"] for e in expected]
    assert [s["format.think_answer_r1"] for s in single] == [e["format.think_answer_r1"] for e in expected]
    # BatchRewardManager: one call, plural keywords
    batch = fn(data_sources=["arithmetic"] * len(data), solution_strs=[r["completion"] for r in data],
               ground_truths=[r["answer"] for r in data], extra_infos=[{"index": i} for i in range(len(data))])
    assert batch == single
    assert isinstance(single[0]["score"], float)


def test_compute_score_from_a_config_and_its_errors(installed, tmp_path):
    from grpo_core.base.errors import GrpoError

    cfg = tmp_path / "run.yaml"
    cfg.write_text("model: {id: tiny}\ndataset: {name: arithmetic}\nrewards: ['math.correctness:3']\n")
    fn = _verl_loads({"config": str(cfg)})
    assert fn(data_source="x", solution_str="Answer: 4", ground_truth="4")["score"] == 3.0
    with pytest.raises(GrpoError, match="'rewards'"):
        _verl_loads({})(data_source="x", solution_str="4", ground_truth="4")
