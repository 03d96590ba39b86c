"""open-r1 recipes as they are: configs in the shape of open-r1's recipes/*/grpo/*.yaml (read
at commit 1416fa0), with the model and the data swapped for local ones and sized for a CPU,
pass --dry-run and train two steps of the tiny model."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
import yaml

from grpo_core.config.load import load_config
from grpo_core.errors import ConfigError, GrpoError

from .test_train_cli import step_records

SYSTEM = ("You are a helpful AI Assistant that provides well-reasoned and detailed responses. You first think about "
          "the reasoning process as an internal monologue and then provide the user with the answer. Respond in the "
          "following format: <think>\n...\n</think>\n<answer>\n...\n</answer>")

# recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml, every key kept; values for a CPU and the tiny model
MATH = """
model_name_or_path: {model}
model_revision: main
torch_dtype: float32
attn_implementation: eager
dataset_name: math.jsonl
dataset_prompt_column: problem
system_prompt: {system}
bf16: false
use_vllm: false
do_eval: false
gradient_accumulation_steps: 1
gradient_checkpointing: false
gradient_checkpointing_kwargs:
  use_reentrant: false
hub_model_id: Qwen2.5-1.5B-Open-R1-GRPO
hub_strategy: every_save
learning_rate: 2.0e-05
log_completions: false
log_level: info
logging_first_step: true
logging_steps: 1
logging_strategy: steps
lr_scheduler_type: cosine
max_prompt_length: 512
max_completion_length: 8
max_steps: 2
num_generations: 4
num_train_epochs: 1
output_dir: data/Qwen2.5-1.5B-Open-R1-GRPO
overwrite_output_dir: true
per_device_eval_batch_size: 4
per_device_train_batch_size: 4
push_to_hub: false
report_to: none
reward_funcs:
- accuracy
- format
- tag_count
reward_weights:
- 1.0
- 1.0
- 1.0
save_strategy: "no"
save_total_limit: 1
seed: 42
warmup_ratio: 0.1
"""

# recipes/DeepSeek-R1-Distill-Qwen-1.5B/grpo/config_demo.yaml: its chat_template (verbatim), the liger
# kernel, a cosine_with_min_lr schedule
DISTILL_TEMPLATE = (
    "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
    "{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='') %}"
    "{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}"
    "{%- endif %}{%- endfor %}{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}"
    "{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}{%- endif %}"
    "{%- if message['role'] == 'assistant' and message['content'] is not none %}"
    "{{'<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor -%}"
    "{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜>'}}{% endif %}"
)
DISTILL = MATH.replace("attn_implementation: eager\n", "attn_implementation: eager\nchat_template: {template}\n") \
    .replace("lr_scheduler_type: cosine\n", "lr_scheduler_type: cosine_with_min_lr\nlr_scheduler_kwargs:\n"
             "  min_lr_rate: 0.1\n") \
    .replace("warmup_ratio: 0.1\n", "warmup_ratio: 0.1\ntemperature: 0.7\nuse_liger_kernel: true\n")

# open-r1's cosine and repetition_penalty rewards with their fields (GRPOScriptArguments), beside format
COSINE = MATH.replace("""reward_funcs:
- accuracy
- format
- tag_count
reward_weights:
- 1.0
- 1.0
- 1.0
""", """reward_funcs:
- cosine
- repetition_penalty
- format
reward_weights:
- 1.0
- 0.5
- 0.2
cosine_min_value_wrong: -1.0
cosine_max_value_wrong: -0.5
cosine_min_value_correct: 0.5
cosine_max_value_correct: 1.0
cosine_max_len: 100
repetition_n_grams: 2
repetition_max_penalty: -0.5
""")


@pytest.fixture
def r1_dir(tmp_path, monkeypatch, tiny_model, register_plugin):
    """A working directory with open-r1-shaped data (problem, a worked solution ending in a box),
    open-r1's math and format rewards registered."""
    import grpo_rewards_format
    import grpo_rewards_math

    register_plugin(grpo_rewards_math, name="math")
    register_plugin(grpo_rewards_format, name="format")
    rows = [{"problem": f"What is {i} + {i}?", "solution": f"Adding, {i} + {i} = {2 * i}, so the sum is "
             f"$\\boxed{{{2 * i}}}$."} for i in range(16)]
    (tmp_path / "math.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def recipe(r1_dir, tiny_model, text: str, name: str):
    path = r1_dir / name
    path.write_text(text.format(model=tiny_model, system=json.dumps(SYSTEM), template=json.dumps(DISTILL_TEMPLATE)))
    return path


def dry_then_train(grpo, path, out):
    code, stdout, err = grpo(path, "--dry-run", model=False, out=out)
    assert code == 0, stdout + err  # the check's table is on stdout
    code, _, err = grpo(path, model=False, out=out)
    assert code == 0, err
    return err, yaml.safe_load((out / "config.yaml").read_text()), step_records(out / "metrics.jsonl")


def test_the_math_recipe_runs_as_it_is(grpo, r1_dir, tiny_model):
    path = recipe(r1_dir, tiny_model, MATH, "config_demo.yaml")
    err, resolved, steps = dry_then_train(grpo, path, r1_dir / "out")
    assert resolved["rewards"] == ["math.correctness:1", "format.think_answer_r1:1", "format.tag_count:1"]
    assert resolved["dataset"]["name"] == "openr1"
    assert resolved["dataset"]["params"] == {"dataset_name": "math.jsonl", "prompt_column": "problem",
                                             "columns": {"solution": "answer"}}
    assert resolved["dataset"]["system_prompt"] == SYSTEM
    assert len(steps) == 2
    for name in ("math.correctness", "format.think_answer_r1", "format.tag_count"):
        assert f"rewards/{name}/mean" in steps[0]
    for note in ("note: torch_dtype: float32 -> model.dtype: float32", "note: max_prompt_length: 512 dropped",
                 "note: overwrite_output_dir: true dropped", "note: warmup_ratio: 0.1 -> warmup_steps: 0.1"):
        assert err.count(note) == 1  # once per run, not once per stage or process


def test_the_math_recipe_prompts_and_gold_answers_are_open_r1s(r1_dir, tiny_model):
    from grpo_core.run.prepare import build_datasets

    cfg = load_config(recipe(r1_dir, tiny_model, MATH, "config_demo.yaml"))
    train, _ = build_datasets(cfg)
    # make_conversation: the system prompt, then the prompt column's text as the user's turn
    assert train[3]["prompt"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is 3 + 3?"}]
    assert train[3]["answer"] == "6"  # accuracy reads the solution's box, as open-r1's math_verify does
    assert "solution" not in train.column_names


def test_the_distilled_model_recipe_trains_with_its_chat_template(grpo, r1_dir, tiny_model, monkeypatch):
    path = recipe(r1_dir, tiny_model, DISTILL, "distill.yaml")
    err, resolved, steps = dry_then_train(grpo, path, r1_dir / "out")
    assert resolved["model"]["chat_template"] == DISTILL_TEMPLATE
    # the tokenizer the trainer used (and saved) renders prompts with the recipe's template
    assert (r1_dir / "out" / "model" / "chat_template.jinja").read_text() == DISTILL_TEMPLATE
    assert len(steps) == 2
    # grpo eval samples the base model with the recipe's template too, not the model's own
    from grpo_core.cli import main
    from grpo_core.trainer import generation

    seen, real = [], generation.generate
    monkeypatch.setattr(generation, "generate", lambda model, tok, prompts, **kw: (
        seen.append(tok.chat_template), real(model, tok, prompts, **kw))[1])
    assert main(["eval", str(path), "--checkpoint", str(r1_dir / "out" / "model"), "--split", "train",
                 "--limit", "2", "--output", str(r1_dir / "eval.json")]) == 0
    assert seen == [DISTILL_TEMPLATE, DISTILL_TEMPLATE]  # base, then trained
    if importlib.util.find_spec("liger_kernel") is None:
        assert "note: use_liger_kernel: true dropped; liger-kernel is not installed" in err


def test_a_chat_template_that_does_not_parse_is_a_problem_before_the_model(r1_dir, tiny_model):
    text = DISTILL.replace("chat_template: {template}", "chat_template: \"{{% for m in messages %}}{{{{ m }}\"")
    with pytest.raises(ConfigError, match=r"model.chat_template \(chat_template\) is not a valid Jinja template: "):
        load_config(recipe(r1_dir, tiny_model, text, "bad.yaml"))


def test_cosine_and_repetition_fields_become_the_rewards_parameters(grpo, r1_dir, tiny_model):
    path = recipe(r1_dir, tiny_model, COSINE, "cosine.yaml")
    err, resolved, steps = dry_then_train(grpo, path, r1_dir / "out")
    # open-r1's fields by name; unit='chars' and language='en' give open-r1's lengths and words
    assert resolved["rewards"] == [
        "math.cosine(unit='chars', min_value_wrong=-1.0, max_value_wrong=-0.5, min_value_correct=0.5, "
        "max_value_correct=1.0, max_len=100):1",
        "repetition.ngram(language='en', n=2, max_penalty=-0.5):0.5",
        "format.think_answer_r1:0.2",
    ]
    assert len(steps) == 2 and "rewards/math.cosine/mean" in steps[0]


def test_open_r1_wandb_fields_are_trls_environment_variables_and_its_own_fields_are_noted(r1_dir, tiny_model):
    text = MATH + ("wandb_entity: huggingface\nwandb_project: open-r1\nwandb_run_group: demo\n"
                   "callbacks:\n- push_to_hub_revision\nbenchmarks:\n- lcb_v4\nhub_model_revision: v01.00\n"
                   "num_completions_to_print: 2\ncosine_max_len: 1000\n")
    cfg = load_config(recipe(r1_dir, tiny_model, text, "wandb.yaml"))
    assert cfg.env == {"WANDB_ENTITY": "huggingface", "WANDB_PROJECT": "open-r1", "WANDB_RUN_GROUP": "demo"}
    assert cfg.training["num_completions_to_print"] == 2  # TRL's own field now
    ignored = [n.split(" ignored")[0] for n in cfg.notes if " ignored" in n]
    assert ignored == ["callbacks", "benchmarks", "hub_model_revision", "cosine_max_len"]
    assert ("cosine_max_len ignored: only open-r1's cosine read it, and reward_funcs does not list it."
            in cfg.notes)


@pytest.mark.parametrize("extra, both", [
    ({"dataset": {"name": "x"}}, "'dataset_name' (TRL's name) and 'dataset' (grpo's)"),
    ({"env": {"WANDB_PROJECT": "p"}, "wandb_project": "q"}, "'wandb_project' (open-r1's name) and 'env.WANDB_PROJECT' (grpo's)"),
    ({"log_unique_prompts": True, "wandb_log_unique_prompts": False},
     "'wandb_log_unique_prompts' (open-r1's name) and 'log_unique_prompts' (grpo's)"),
])
def test_a_setting_set_both_ways_is_an_error_naming_both(r1_dir, tiny_model, extra, both):
    data = {**yaml.safe_load(recipe(r1_dir, tiny_model, MATH, "c.yaml").read_text()), **extra}
    with pytest.raises(ConfigError) as info:
        load_config(None, data=data)
    assert both in str(info.value)


def test_the_system_prompt_set_both_ways_is_an_error_naming_both(r1_dir, tiny_model):
    data = yaml.safe_load(recipe(r1_dir, tiny_model, MATH, "c.yaml").read_text())
    data.pop("dataset_name")
    data.pop("dataset_prompt_column")
    data["dataset"] = {"name": "openr1", "params": {"dataset_name": "math.jsonl"}, "system_prompt": "Be brief."}
    with pytest.raises(ConfigError, match=r"'system_prompt' \(open-r1's name\) and 'dataset.system_prompt' \(grpo's\)"):
        load_config(None, data=data)


@pytest.mark.parametrize("extra, expected", [
    ({"reward_funcs": ["ioi_code", "format"], "reward_weights": [1.0, 0.1]},
     "'ioi_code' is open-r1's remote judge: it needs IOI problems judged by a Piston or Morph server"),
    ({"code_provider": "e2b"}, "code_provider: 'e2b' needs E2B or Morph sandboxes"),
    ({"ioi_provider": "piston"}, "ioi_provider: 'piston' needs a Piston or Morph server for open-r1's ioi_code"),
    ({"max_completion_len": 100}, "'max_completion_len' is open-r1's soft_overlong_punishment length, which "
                                  "reward_funcs does not list; for the completion length use max_completion_length."),
])
def test_remote_judges_are_a_clear_error_naming_what_they_need(r1_dir, tiny_model, extra, expected):
    data = {**yaml.safe_load(recipe(r1_dir, tiny_model, MATH, "c.yaml").read_text()), **extra}
    with pytest.raises(ConfigError) as info:
        load_config(None, data=data)
    assert expected in str(info.value)
    if "code" in expected:
        assert "code.tests runs a row's stdin/stdout cases (verification_info) and assert tests" in str(info.value)


def test_a_recipe_as_published_names_every_problem_of_this_machine_at_once(r1_dir, tiny_model):
    """The published config_demo.yaml, only the model and the dataset swapped: whatever this
    machine lacks (vLLM, wandb, flash-attn, the Hub) is listed in one error."""
    text = MATH.replace("use_vllm: false", "use_vllm: true").replace("report_to: none", "report_to:\n- wandb") \
        .replace("push_to_hub: false", "push_to_hub: true") \
        .replace("attn_implementation: eager", "attn_implementation: flash_attention_2")
    lacking = [m for m, present in (
        ("use_vllm: true needs vLLM", importlib.util.find_spec("vllm")),
        ("report_to wandb needs the wandb package", importlib.util.find_spec("wandb")),
        ("model.attn_implementation flash_attention_2 needs the flash-attn package",
         importlib.util.find_spec("flash_attn") or importlib.util.find_spec("kernels")),
        ("push_to_hub: true needs the Hugging Face Hub", os.environ.get("HF_HUB_OFFLINE") != "1")) if not present]
    if len(lacking) < 2:
        pytest.skip("this machine has what the recipe needs")
    with pytest.raises(ConfigError) as info:
        load_config(recipe(r1_dir, tiny_model, text, "config_demo.yaml"))
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{len(lacking)} problems in ") and len(lines) == len(lacking) + 1
    for problem in lacking:
        assert [line for line in lines[1:] if line.split(". ", 1)[1].startswith(problem)] != []


def test_an_open_r1_mixture_keeps_each_entrys_share_and_a_seeded_test_split(r1_dir, tiny_model):
    from grpo_core import load_dataset

    more = [{"problem": f"What is {i} times 3?", "solution": f"$\\boxed{{{3 * i}}}$", "source": "x"} for i in range(4)]
    (r1_dir / "more.jsonl").write_text("".join(json.dumps(r) + "\n" for r in more))
    mixture = {"datasets": [{"id": "math.jsonl", "weight": 0.5, "columns": ["problem", "solution"]},
                            {"id": "more.jsonl", "columns": ["problem", "solution"]}],
               "seed": 3, "test_split_size": 0.25}
    params = {"dataset_mixture": mixture, "prompt_column": "problem", "columns": {"solution": "answer"}}
    train = load_dataset("openr1", split="train", **params)
    test = load_dataset("openr1", split="test", **params)
    # 16 rows x 0.5 = 8 kept, + the 4 of more.jsonl (no weight: all) = 12; a quarter of them (3) held out
    assert (len(train), len(test)) == (9, 3)
    questions = list(train["question"]) + list(test["question"])
    assert sum(q.endswith("times 3?") for q in questions) == 4
    assert len(set(questions)) == 12
    assert sorted(train.column_names) == ["answer", "question"]
    assert list(load_dataset("openr1", split="train", **params)["question"]) == list(train["question"])  # seeded


def test_a_mixture_with_dataset_name_or_bad_entries_is_refused_before_loading(r1_dir, tiny_model):
    data = yaml.safe_load(recipe(r1_dir, tiny_model, MATH, "c.yaml").read_text())
    data["dataset_mixture"] = {"datasets": [{"id": "math.jsonl", "weight": 0}, {"name": "x"}], "shuffle": True}
    with pytest.raises(ConfigError) as info:
        load_config(None, data=data)
    assert str(info.value).splitlines()[1:] == [
        "  1. 'dataset_name' and 'dataset_mixture' both name the training data (open-r1 would take the mixture and "
        "ignore dataset_name); keep one of them.",
        "  2. dataset_mixture has no option 'shuffle'; its options are: datasets, seed, test_split_size.",
        "  3. dataset_mixture.datasets entry 1 (math.jsonl): weight 0 must be a number > 0 (the share of its rows "
        "kept, 1.0 for all).",
        "  4. dataset_mixture.datasets entry 2 needs an id (a hub id or a local path), got {'name': 'x'}.",
    ]


# ------------------------------------------------------------------ code

# recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo_code.yaml: code + format with reward_weights, beta
CODE = MATH.replace("dataset_name: math.jsonl\ndataset_prompt_column: problem\n",
                    "dataset_name: code.jsonl\ndataset_prompt_column: problem_statement\n") \
    .replace("learning_rate: 2.0e-05\n", "beta: 0.01\nlearning_rate: 5.0e-06\n") \
    .replace("""reward_funcs:
- accuracy
- format
- tag_count
reward_weights:
- 1.0
- 1.0
- 1.0
""", """reward_funcs:
- code
- format
reward_weights:
- 1.0
- 0.1
temperature: 1.0
""")


@pytest.fixture
def code_dir(r1_dir, register_plugin):
    """open-r1's verifiable-coding-problems shape: a statement and stdin/stdout cases in verification_info."""
    import grpo_rewards_code

    register_plugin(grpo_rewards_code, name="code")
    rows = [{"problem_statement": f"Read n and print n + {i}.", "verification_info": {
        "language": "python", "test_cases": [{"input": "1\n", "output": f"{1 + i}\n", "type": "stdin_stdout"},
                                             {"input": "5\n", "output": f"{5 + i}\n", "type": "stdin_stdout"}]}}
            for i in range(8)]
    (r1_dir / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return r1_dir


def test_the_code_recipe_maps_to_the_local_sandbox_rewards(code_dir, tiny_model):
    cfg = load_config(recipe(code_dir, tiny_model, CODE, "config_demo_code.yaml"))
    # parallel_code_exec_per_proc (open-r1's default 2) is code.tests' sandboxes at a time
    assert [str(s) for s in cfg.stages[0].rewards] == ["code.tests(workers=2):1", "format.think_answer_r1:0.1"]
    text = CODE.replace("- code\n- format\n", "- binary_code\n- code_format\n") + "parallel_code_exec_per_proc: 4\n"
    cfg = load_config(recipe(code_dir, tiny_model, text, "binary.yaml"))
    assert [str(s) for s in cfg.stages[0].rewards] == ["code.tests(all_or_nothing=True, workers=4):1",
                                                       "code.format:0.1"]
    with pytest.raises(ConfigError, match="code_language: 'cpp': grpo's code rewards .* read Python only"):
        load_config(recipe(code_dir, tiny_model, text + "code_language: cpp\n", "cpp.yaml"))


def test_a_mapped_reward_whose_plugin_is_not_loaded_names_the_distribution(r1_dir, tiny_model):
    with pytest.raises(GrpoError) as info:  # r1_dir registers the math and format plugins only
        load_config(recipe(r1_dir, tiny_model, CODE, "config_demo_code.yaml"))
    assert str(info.value).startswith("unknown reward 'code.tests'.")
    assert str(info.value).endswith("open-r1's code and binary_code map to code.tests, from grpo-rewards-code: pip "
                                    "install grpo-rewards-code (and, if GRPO_PLUGINS is set, add it there).")


def test_the_code_recipe_runs_as_it_is(grpo, code_dir, tiny_model):
    import inspect

    from grpo_rewards_code import tests as code_tests

    if inspect.signature(code_tests).parameters["tests"].default is inspect.Parameter.empty:
        pytest.skip("code.tests still needs a tests column: open-r1's verification_info is grpo-rewards-code's to read")
    path = recipe(code_dir, tiny_model, CODE, "config_demo_code.yaml")
    err, resolved, steps = dry_then_train(grpo, path, code_dir / "out")
    assert resolved["rewards"] == ["code.tests(workers=2):1", "format.think_answer_r1:0.1"]
    assert len(steps) == 2 and "rewards/code.tests/mean" in steps[0]
