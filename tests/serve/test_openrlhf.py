"""`grpo serve` through OpenRLHF 0.11.2's own code: its remote-reward client
(``openrlhf.utils.agent.SingleTurnAgentExecutor``) sends the queries, its experience
builder (``SamplesGenerator._process_response_into_experience``) turns the answers into
tensors. Every sample must score as `grpo score` scores the response alone.

OpenRLHF is installed without its heavy dependencies (scripts/setup.sh): its samples
generator module imports vLLM and Ray at its top, so the builder's one method is
compiled from OpenRLHF's installed source file as it is (no stand-in module)."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.serve.conftest import peer
from tests.serve.test_serve import grpo_score, rows

EOS = "<|im_end|>"  # the test tokenizer's end of sequence (grpo_core.testing.make_tokenizer)


def peers_rows(n: int) -> list[dict]:
    """Arithmetic rows in a chat template, some with non-ASCII text, some with the empty
    label OpenRLHF sends when no --data.label_key is set."""
    out = []
    for i, r in enumerate(rows(n)):
        question = r["prompt"] + (" Ünïcödé: 答えは? 🙂" if i % 7 == 3 else "")
        prompt = f"<|im_start|>system\nThink, then answer.{EOS}\n<|im_start|>user\n{question}{EOS}\n<|im_start|>assistant\n"
        completion = r["completion"].replace("adding", "adding ∑ ünïcödé") if i % 7 == 5 else r["completion"]
        out.append({"prompt": prompt, "completion": completion, "answer": "" if i % 11 == 4 else r["answer"]})
    return out


def experience_builder():
    """OpenRLHF's SamplesGenerator._process_response_into_experience, compiled from its
    installed source: the module imports vLLM and Ray, which the method does not use."""
    from openrlhf.trainer.ppo_utils.experience import Experience

    path = Path(importlib.util.find_spec("openrlhf.trainer.ppo_utils.samples_generator").origin)
    tree = ast.parse(path.read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SamplesGenerator"]
    (method,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_process_response_into_experience"]
    import torch

    namespace = {"torch": torch, "Experience": Experience}
    exec(compile(ast.Module([method], []), str(path), "exec"), namespace)  # noqa: S102 - OpenRLHF's own code
    return namespace["_process_response_into_experience"]


def expected_logs(e: dict) -> tuple[dict, float]:
    """What extra_logs must say for one `grpo score` row: each reward's value (0.0 for
    none) and how many gave none."""
    values = {name: e[name] for name in ("math.correctness", "format.think_answer_r1")}
    return {k: 0.0 if v is None else v for k, v in values.items()}, float(sum(v is None for v in values.values()))


class Engine:
    """vLLM's place in OpenRLHF's rollout: generate() gives back the completion's tokens
    and the end-of-sequence token, as vLLM does when a sample stops."""

    def __init__(self, tokenizer, completion: str):
        self.tok, self.completion = tokenizer, completion

    async def generate(self, prompt_token_ids, params, multi_modal_data=None):
        ids = self.tok(self.completion, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text=self.completion + EOS,
                                                        finish_reason="stop", logprobs=None)])


def test_openrlhfs_client_and_experience_builder_score_as_grpo_score(serving, tmp_path):
    agent = peer("openrlhf.utils.agent")
    from openrlhf.trainer.ppo_utils.experience import Experience

    from grpo_core.testing import make_tokenizer

    data = peers_rows(512)
    expected = grpo_score(tmp_path, data)
    assert sum(e["math.correctness"] is None for e in expected) >= 40  # the empty labels score None there
    tok = make_tokenizer()
    build = experience_builder()
    with serving(queue=64, max_body=8 * 1024 * 1024, max_items=1024) as url:
        executor = agent.SingleTurnAgentExecutor(f"{url}/get_reward")
        # batch 512: the query is prompt + response + the end-of-sequence text
        (answer,) = asyncio.run(executor._fetch_rewards_via_http(
            [r["prompt"] + r["completion"] + EOS for r in data], [r["prompt"] for r in data],
            [r["answer"] for r in data]))
        assert answer["rewards"] == [e["total"] for e in expected]
        for name in ("math.correctness", "format.think_answer_r1"):
            assert answer["extra_logs"][name] == [expected_logs(e)[0][name] for e in expected], name
        assert answer["extra_logs"]["unscored"] == [expected_logs(e)[1] for e in expected]
        assert answer["scores"] == [e["total"] / 3 for e in expected]  # in [0, 1]: 2 x [0, 1] + [0, 1]
        assert sum(e["format.think_answer_r1"] == 1.0 for e in expected) > 0  # the format reward pays, EOS or not

        # batch 1: OpenRLHF's rollout, one sample at a time; every other prompt cut to its last
        # 12 tokens (max_len - max_tokens), as OpenRLHF cuts a prompt too long to fit
        async def rollout(i, r):
            params = SimpleNamespace(max_tokens=4096, logprobs=None)
            max_len = 4096 + 12 if i % 2 else 8192
            return await executor.execute(r["prompt"], r["answer"], params, max_len, tok, Engine(tok, r["completion"]))

        async def all_samples():
            out = []
            for start in range(0, len(data), 32):
                out += await asyncio.gather(*(rollout(start + j, r) for j, r in enumerate(data[start:start + 32])))
            return out

        outputs = asyncio.run(all_samples())
    assert [o["reward"] for o in outputs] == [[e["total"]] for e in expected]
    assert [o["extra_logs"]["unscored"] for o in outputs] == [[expected_logs(e)[1]] for e in expected]
    experiences = [build(None, o, max_len=8192) for o in outputs]
    batch = Experience.concat_experiences(experiences, tok.pad_token_id)
    assert batch.rewards.flatten().tolist() == pytest.approx([e["total"] for e in expected])
    assert batch.info["math.correctness"].flatten().tolist() == [expected_logs(e)[0]["math.correctness"]
                                                                 for e in expected]
    assert batch.info["unscored"].sum().item() == sum(expected_logs(e)[1] for e in expected)
