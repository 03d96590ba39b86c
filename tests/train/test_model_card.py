"""The run folder's README.md is grpo's model card: the base model, the dataset (name,
parameters, split), the rewards and weights, the learning settings, held-out accuracy as the
run measured it, and how to load the weights; grpo eval on the final weights adds its base ->
trained figures. TRL's generic card ("a fine-tuned version of [None]") is not written."""

from __future__ import annotations

import json

from .conftest import TINY
from .test_heldout import HELDOUT, digit_correctness, sharp_model  # noqa: F401 - fixtures

REWARDS = ("--rewards", "test.even_or_none", "test.short(max_chars=40):0.1")


def test_a_finished_run_has_grpos_model_card_and_grpo_eval_adds_its_figures(grpo, digit_correctness, sharp_model,  # noqa: F811
                                                                          tmp_path):
    from grpo_core.cli import main

    # a checkpoint every step: TRL would write its card into the run folder at each one
    code, out, err = grpo(TINY, "--max_steps", "4", *REWARDS, "--no-check", *HELDOUT, "--dataset.params.size", "32",
                          "--learning_rate", "0.03", "--save_strategy", "steps", "--save_steps", "1",
                          "--model.id", str(sharp_model), model=False)
    assert code == 0, out + err
    run = tmp_path / "out"
    card = (run / "README.md").read_text()
    assert "fine-tuned version of [None]" not in card and "Model Card for" not in card
    header = card.split("---\n")[1]
    assert "library_name: peft" in header and "- grpo" in header and "base_model" not in header  # a local model
    assert f"A LoRA adapter on `{sharp_model}`, trained with GRPO" in card and "for 4 steps on the `toy` dataset" in card
    # the data: name, parameters, split, the held-out split, the system prompt
    assert "- dataset: `toy`" in card and "- training split: `train`" in card
    assert '- parameters: `{"size": 32}`' in card and "- held-out split: `test`" in card
    assert "- system prompt: `Answer with a number.`" in card
    # the rewards with their weights and parameters; the correctness one said
    assert ("- `test.even_or_none`, weight 1; correctness: held-out accuracy is its share of full marks"
            in card.splitlines())
    assert '- `test.short`, weight 0.1; parameters `{"max_chars": 40}`' in card.splitlines()
    # the method and its settings
    assert "- learning method: `grpo` (TRL's GRPO advantages)" in card
    assert ("max_steps 4, learning_rate 0.03 (linear), per_device_train_batch_size 4, gradient_accumulation_steps "
            "1, num_generations 4, max_completion_length 8, temperature 1, beta 0, seed 0") in card
    assert "- LoRA: r 4, lora_alpha 8, lora_dropout 0.0, target_modules all-linear" in card
    # held-out accuracy as metrics.jsonl has it: measured after steps 1, 2 and 4, on 6 prompts
    steps = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    held = [(r["step"], r["eval/accuracy"]) for r in steps if "eval/accuracy" in r]
    assert [s for s, _ in held] == [1, 2, 4]
    assert held[0][1] != held[-1][1]  # (0.5 and 0.75 here: the card must tell the first from the last)
    assert (f"Held-out accuracy while training (greedy answers to 6 prompts of the `test` split, measured 3 times): "
            f"**{held[0][1]:.3f}** after step 1 -> **{held[-1][1]:.3f}** after step 4.") in card
    rewards = [r for r in steps if "reward" in r]
    assert f"Mean training reward (total): {rewards[0]['reward']:.3f} at step 1 -> {rewards[-1]['reward']:.3f} at step 4." \
        in card
    assert f"`grpo eval {run.resolve() / 'config.yaml'}` (it writes its figures here)" in card
    # how to load it
    assert f"model = AutoPeftModelForCausalLM.from_pretrained('{run.resolve() / 'adapter'}')" in card

    # grpo eval on the run's final weights: base -> trained, in the card, the rest unchanged
    assert main(["eval", str(TINY), "--model.id", str(sharp_model), "--checkpoint", str(run), "--limit", "6",
                 "--split", "test", *REWARDS]) == 0
    report = json.loads((run / "adapter" / "eval.json").read_text())
    base, trained = report["base"], report["trained"]
    after = (run / "README.md").read_text()
    assert (f"`grpo eval` on 6 prompts of the `test` split (greedy), base model -> trained:\n\n"
            f"- accuracy: {base['accuracy']:.3f} -> **{trained['accuracy']:.3f}**\n"
            f"- mean total reward: {base['reward_total']:.3f} -> **{trained['reward_total']:.3f}**") in after
    assert trained["accuracy"] == held[-1][1]  # the same prompts, greedy, the same reward: the same figure
    assert after.split("<!-- grpo eval -->")[0] == card.split("<!-- grpo eval -->")[0]
    assert after.split("<!-- /grpo eval -->")[1] == card.split("<!-- /grpo eval -->")[1]
