"""Every grpo setting is documented: a help text in the schema, a row in docs/config.md
(generated from the schema), and `grpo train --help-config` prints the same page."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from grpo_core.config.reference import reference, undocumented
from grpo_core.config.schema import OTHER_KEYS, SECTION_TYPES, SECTIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def test_every_setting_in_the_schema_has_a_help_text():
    assert undocumented() == [], "give each of these a help text: setting(default, 'what it does')"


def test_every_setting_has_its_row_in_docs_config_md():
    text = DOC.read_text()
    missing = [f"{key}.{f.name}" for key, cls in SECTION_TYPES.items() for f in dataclasses.fields(cls)
               if f"| `{key}.{f.name}` |" not in text]
    assert missing == [], f"docs/config.md lacks {missing}: regenerate it with grpo train --help-config > docs/config.md"
    assert text == reference(), "docs/config.md is not what the schema generates: grpo train --help-config > docs/config.md"


def test_every_section_of_the_config_is_in_the_reference():
    # a config section is either a schema dataclass or one of the other keys described by hand
    assert sorted(SECTIONS) == sorted(set(SECTION_TYPES) | set(OTHER_KEYS) - {"env"})


def test_a_row_shows_type_default_help_and_choices():
    row = next(line for line in reference().splitlines() if line.startswith("| `health.on_reward_timeout` |"))
    assert row == ("| `health.on_reward_timeout` | `str` | `stop` | A reward past max_reward_timeouts: stop (the run, "
                   "with a checkpoint) or drop (train on without it, said loudly). One of: stop, drop. |")
    row = next(line for line in reference().splitlines() if line.startswith("| `dataset.params` |"))
    assert "| `dict` | `{}` |" in row  # a default_factory's value


def test_help_config_prints_the_page_without_importing_torch():
    code = ("import sys, grpo_core.cli\n"
            "try:\n    grpo_core.cli.main(['train', '--help-config'])\nexcept SystemExit as e:\n    code = e.code\n"
            "print('HEAVY', [m for m in ('torch', 'trl', 'transformers') if m in sys.modules], file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout == reference()
    assert "HEAVY []" in out.stderr
