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


def test_through_verls_own_reward_manager(installed, tmp_path):
    """verl's own code end to end on a small batch (skipped where verl is not installed):
    its loader (get_custom_reward_fn / load_reward_manager), its legacy NaiveRewardManager
    and BatchRewardManager, and the reward-loop worker 0.9+ trains with; each decodes the
    response token ids and puts the score on the last valid response token."""
    pytest.importorskip("verl.workers.reward_manager")
    pytest.importorskip("verl.experimental.reward_loop")
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls
    from verl.workers.reward_manager import BatchRewardManager, NaiveRewardManager

    import grpo_core.serve.verl as ours
    from grpo_core.testing import make_tokenizer

    data = rows(15)
    tok = make_tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    # verl scores the DECODED response: the byte-level tokenizer gives back the very text,
    # so grpo score on the rows is what verl must report.
    prompt_ids = [tok(r["prompt"])["input_ids"] for r in data]
    response_ids = [tok(r["completion"])["input_ids"] + [tok.eos_token_id] for r in data]
    assert [tok.decode(ids, skip_special_tokens=True) for ids in response_ids] == [r["completion"] for r in data]
    expected = grpo_score(tmp_path, data)

    # a rollout's batch: prompts left-padded, responses right-padded, one attention mask
    P, R, pad = max(map(len, prompt_ids)), max(map(len, response_ids)), tok.pad_token_id
    prompts = torch.tensor([[pad] * (P - len(p)) + p for p in prompt_ids])
    responses = torch.tensor([r + [pad] * (R - len(r)) for r in response_ids])
    mask = torch.tensor([[0] * (P - len(p)) + [1] * (len(p) + len(r)) + [0] * (R - len(r))
                         for p, r in zip(prompt_ids, response_ids)])

    def batch():
        return DataProto.from_dict(
            tensors={"prompts": prompts, "responses": responses, "input_ids": torch.cat([prompts, responses], 1),
                     "attention_mask": mask},
            non_tensors={"data_source": np.array(["arithmetic"] * len(data), dtype=object),
                         "reward_model": [{"ground_truth": r["answer"], "style": "rule"} for r in data],
                         "extra_info": [{"index": i, "question": r["prompt"]} for i, r in enumerate(data)]})

    config = OmegaConf.create({
        "actor_rollout_ref": {"model": {"path": str(tmp_path / "tok"), "tokenizer_path": None}},
        "reward": {"custom_reward_function": {"path": ours.__file__, "name": "compute_score",
                                              "reward_kwargs": {"rewards": SPECS}},
                   "reward_manager": {"source": "register", "name": "naive"},
                   "reward_model": {"enable": False}}})
    totals = [e["total"] for e in expected]
    lengths = [len(r) for r in response_ids]

    def check(reward_tensor, extra):
        at_end = torch.zeros_like(reward_tensor)
        at_end[torch.arange(len(data)), torch.tensor(lengths) - 1] = torch.tensor(totals, dtype=torch.float32)
        assert torch.equal(reward_tensor, at_end)
        assert reward_tensor.sum(-1).tolist() == totals
        assert list(extra["score"]) == totals
        for name in ("math.correctness", "format.think_answer_r1"):
            assert list(extra[name]) == [e[name] for e in expected], name

    fn = get_custom_reward_fn(config)  # what verl's trainer builds from custom_reward_function
    for manager in (NaiveRewardManager(tok, num_examine=0, compute_score=fn),
                    BatchRewardManager(tok, num_examine=0, compute_score=fn)):
        out = manager(batch(), return_dict=True)
        check(out["reward_tensor"], out["reward_extra_info"])

    # verl 0.9's reward loop: a RewardLoopWorker (a Ray actor in training) loads the tokenizer
    # and the manager (load_reward_manager), scores each item in an executor thread, and
    # RewardLoopManager assembles rm_scores with the manager class's assemble_rm_scores
    worker = RewardLoopWorker(config)
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(batch()))
    rm_scores = resolve_reward_manager_cls(config).assemble_rm_scores(batch(), [o["reward_score"] for o in outputs])
    infos = [o["reward_extra_info"] for o in outputs]
    check(rm_scores, {k: [info[k] for info in infos] for k in infos[0]})
