"""docs/serve.md's commands for OpenRLHF and verl, run as far as this machine allows:
OpenRLHF's own argument parser and checks on the documented command, and verl's own
default config with the documented overrides, scored through the reward-loop worker
verl builds from it. Training itself needs GPUs, vLLM and a Ray cluster."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from tests.serve.conftest import peer
from tests.serve.test_serve import SPECS, grpo_score, rows
from tests.serve.verl_layout import verl_batch

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"


def command(*words: str, having: str = "") -> list[str]:
    """The doc's one bash command line that runs ``words`` (and holds ``having``), as argv
    after them."""
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.S)
    lines = [line for b in blocks for line in b.replace("\\\n", " ").splitlines()
             if " ".join(words) in line and having in line]
    (line,) = lines
    argv = shlex.split(line)
    at = next(i for i in range(len(argv)) if argv[i:i + len(words)] == list(words))
    return argv[at + len(words):]


def test_openrlhfs_parser_takes_the_documented_command(monkeypatch):
    """The documented flags are OpenRLHF 0.11.2's: its train_ppo_ray main block (parser,
    hierarchize and every check before train()) runs on them."""
    peer("openrlhf.utils.config")
    path = Path(importlib.util.find_spec("openrlhf").origin).parent / "cli" / "train_ppo_ray.py"
    tree = ast.parse(path.read_text())
    (main,) = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    *checks, last = main.body
    assert ast.unparse(last) == "train(args)"  # everything before it runs, as OpenRLHF runs it
    argv = command("openrlhf.cli.train_ppo_ray")
    monkeypatch.setattr(sys, "argv", ["train_ppo_ray.py", *argv])
    # the module's own imports that the block uses (its others bring in vLLM and DeepSpeed)
    header = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
              and all(a.name in ("argparse", "os", "datetime") for a in n.names)
              and getattr(n, "module", None) in (None, "datetime")]
    namespace = {"__name__": "openrlhf_main"}
    exec(compile(ast.Module(header, []), str(path), "exec"), namespace)  # noqa: S102
    exec(compile(ast.Module(checks, []), str(path), "exec"), namespace)  # noqa: S102 - OpenRLHF's code
    args = namespace["args"]
    served = command("grpo", "serve", having="--port")
    port = served[served.index("--port") + 1]
    assert args.reward.remote_url == [f"http://127.0.0.1:{port}/get_reward"]
    assert args.data.label_key == "answer" and args.algo.dynamic_filtering_enable
    assert tuple(args.algo.dynamic_filtering_range) == (0.0, 1.0)


def verl_overrides(verl_py: str) -> list[tuple[str, object, bool]]:
    """(key, value, added) for each documented override; ``$GRPO_VERL`` is the module's path."""
    out = []
    for item in command("verl.trainer.main_ppo"):
        key, value = item.split("=", 1)
        added = key.startswith("+")
        out.append((key.lstrip("+"), yaml.safe_load(value.replace("$GRPO_VERL", verl_py)), added))
    return out


def test_verls_config_with_the_documented_overrides_scores_as_grpo_score(installed, tmp_path):
    """verl 0.9.1's own default trainer config, the documented overrides applied (a key
    without ``+`` must exist in it, one with ``+`` must not), then verl's reward-loop
    worker built from it scores as `grpo score`; the manager named ``batch`` is refused."""
    peer("verl.experimental.reward_loop")
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    import grpo_core.serve.verl as ours
    from grpo_core.testing import make_tokenizer

    default = Path(importlib.util.find_spec("verl").origin).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    config = OmegaConf.load(default)
    for key, value, added in verl_overrides(ours.__file__):
        assert (OmegaConf.select(config, key, default="<absent>") == "<absent>") == added, key
        OmegaConf.update(config, key, value, force_add=True)
    assert config.reward.custom_reward_function.reward_kwargs.rewards == SPECS
    with pytest.raises(ValueError, match="Unknown reward manager: batch"):
        get_reward_manager_cls("batch")

    make_tokenizer().save_pretrained(tmp_path / "tok")
    OmegaConf.update(config, "actor_rollout_ref.model.path", str(tmp_path / "tok"))
    data = rows(20)
    expected = grpo_score(tmp_path, data)
    worker = RewardLoopWorker(config)
    tok = AutoTokenizer.from_pretrained(tmp_path / "tok")
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(verl_batch(tok, data)))
    assert [o["reward_score"] for o in outputs] == [e["total"] for e in expected]
    assert json.dumps([o["reward_extra_info"]["math.correctness"] for o in outputs]) == json.dumps(
        [e["math.correctness"] for e in expected])
