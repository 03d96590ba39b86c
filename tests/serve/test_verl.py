"""grpo's compute_score as verl loads and calls it: the same scores as `grpo score`."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.serve.conftest import peer
from tests.serve.test_serve import SPECS, grpo_score, rows
from tests.serve.verl_layout import verl_batch


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


def test_compute_score_reads_extra_info_and_keeps_none_apart(installed, tmp_path, monkeypatch):
    import math

    (tmp_path / "hard.py").write_text("def hard(completions, difficulty, **kw):\n"
                                      "    return [float(d) for d in difficulty]\n")
    monkeypatch.chdir(tmp_path)
    fn = _verl_loads({"rewards": ["math.correctness:2", "hard.py:hard:0.5"]})
    # extra_info fills the column the second reward reads
    item = fn(data_source="x", solution_str="Answer: 4", ground_truth="4", extra_info={"difficulty": 3})
    assert item == {"score": 3.5, "math.correctness": 1.0, "hard": 3.0, "unscored": 0}
    # no gold answer: math.correctness has no opinion, NaN (not 0.0), counted, left out of the total
    item = fn(data_source="x", solution_str="Answer: 4", ground_truth="", extra_info={"difficulty": 2})
    assert math.isnan(item["math.correctness"]) and item["unscored"] == 1
    assert item["score"] == 1.0 and item["hard"] == 2.0
    # the batch form reads each item's extra_info, also the keys only a reward's **kwargs reads (as TRL
    # passes every dataset column)
    (tmp_path / "bonus.py").write_text("def bonus(completions, **kw):\n"
                                       "    return [float(b) for b in kw.get('bonus', [0] * len(completions))]\n")
    both = _verl_loads({"rewards": ["hard.py:hard", "bonus.py:bonus"]})
    batch = both(data_sources=["x", "x"], solution_strs=["Answer: 4", "Answer: 5"], ground_truths=["4", "4"],
                 extra_infos=[{"difficulty": 1, "bonus": 0.25}, {"difficulty": 4, "bonus": 0.5}])
    assert [b["hard"] for b in batch] == [1.0, 4.0] and [b["bonus"] for b in batch] == [0.25, 0.5]
    # extra_info keys named as TRL's keywords to every reward are verl's, not columns: left out (a reward
    # given log_metric=1 as a column failed on every item: "got multiple values for keyword argument")
    item = fn(data_source="x", solution_str="Answer: 4", ground_truth="4",
              extra_info={"difficulty": 3, "log_metric": 1, "trainer_state": "s", "log_extra": [], "group_size": 2})
    assert item == {"score": 3.5, "math.correctness": 1.0, "hard": 3.0, "unscored": 0}
    # an end-of-sequence marker left on the solution is not part of the answer
    fmt = _verl_loads({"rewards": ["format.think_answer_r1"]})
    assert fmt(data_source="x", solution_str="<think>\nx\n</think>\n<answer>\n4\n</answer><|im_end|>",
               ground_truth="4")["score"] == 1.0


def test_through_verls_own_reward_manager(installed, tmp_path):
    """verl's own code end to end on a small batch:
    its loader (get_custom_reward_fn / load_reward_manager), its legacy NaiveRewardManager
    and BatchRewardManager, and the reward-loop worker 0.9+ trains with; each decodes the
    response token ids and puts the score on the last valid response token."""
    peer("verl.workers.reward_manager")
    peer("verl.experimental.reward_loop")
    import torch
    from omegaconf import OmegaConf
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
    response_ids = [tok(r["completion"])["input_ids"] + [tok.eos_token_id] for r in data]
    assert [tok.decode(ids, skip_special_tokens=True) for ids in response_ids] == [r["completion"] for r in data]
    expected = grpo_score(tmp_path, data)

    def batch():
        return verl_batch(tok, data)

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


# A cold reward worker: a fresh process that has imported none of grpo, scoring through
# verl 0.9's RewardLoopWorker, whose manager calls compute_score in executor threads
# (16 here): the first 16 calls run at once, then a batch of 100.
COLD_WORKER = """
import asyncio, json, sys
from concurrent.futures import ThreadPoolExecutor
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

tok_path, verl_py, specs, first, rest, here = json.loads(sys.stdin.read())
sys.path.insert(0, here)
from verl_layout import verl_batch
tok = AutoTokenizer.from_pretrained(tok_path)

def batch(data):
    return verl_batch(tok, data)

config = OmegaConf.create({
    "actor_rollout_ref": {"model": {"path": tok_path, "tokenizer_path": None}},
    "reward": {"custom_reward_function": {"path": verl_py, "name": "compute_score", "reward_kwargs": {"rewards": specs}},
               "reward_manager": {"source": "register", "name": "naive"}, "reward_model": {"enable": False}}})
worker = RewardLoopWorker(config)
worker.loop.set_default_executor(ThreadPoolExecutor(16))
cold = batch(first)

async def first_calls():
    return await asyncio.gather(*(worker.compute_score(cold[i:i + 1]) for i in range(len(first))),
                                return_exceptions=True)

out = worker.loop.run_until_complete(first_calls())
errors = [repr(o) for o in out if isinstance(o, BaseException)]
firsts = [None if isinstance(o, BaseException) else o["reward_extra_info"] for o in out]
rests = worker.loop.run_until_complete(worker.compute_score_batch(batch(rest)))
print(json.dumps({"errors": errors, "first": firsts, "rest": [o["reward_extra_info"] for o in rests]}))
"""


def checked_rows(n: int) -> list[dict]:
    """Answers only the math checker decides (a fraction against a decimal gold)."""
    return [{"prompt": f"What is {2 * k + 1} / 4?", "answer": str((2 * k + 1) / 4),
             "completion": f"<think>\ndividing\n</think>\n<answer>\n\\frac{{{2 * k + 1}}}{{4}}\n</answer>"}
            for k in range(n)]


def test_a_cold_verl_worker_16_first_calls_at_once_then_100(installed, tmp_path):
    """verl 0.9.1's reward loop in a fresh process: 16 first calls at once from its executor
    threads, none failing, then 100 completions, each as `grpo score` scores it."""
    peer("verl.experimental.reward_loop")
    import grpo_core.serve.verl as ours
    from grpo_core.testing import make_tokenizer

    first, rest = checked_rows(16), rows(100)
    expected = grpo_score(tmp_path, first + rest)
    expected_first, expected_rest = expected[:16], expected[16:]
    assert all(e["math.correctness"] == 1.0 for e in expected_first)
    make_tokenizer().save_pretrained(tmp_path / "tok")
    proc = subprocess.run([sys.executable, "-c", COLD_WORKER], capture_output=True, text=True, timeout=300,
                          input=json.dumps([str(tmp_path / "tok"), ours.__file__, SPECS, first, rest,
                                            str(Path(__file__).parent)]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["errors"] == []
    for items, expected in ((got["first"], expected_first), (got["rest"], expected_rest)):
        assert [i["score"] for i in items] == [e["total"] for e in expected]
        for name in ("math.correctness", "format.think_answer_r1"):
            assert [i[name] for i in items] == [e[name] for e in expected], name
        assert [i["unscored"] for i in items] == [0] * len(expected)
