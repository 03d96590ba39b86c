#!/usr/bin/env bash
# One row of the TRL table (docs/trl-versions.md): install grpo and one TRL version (and,
# optionally, one transformers version) into a fresh venv of their own, then run
#   1. grpo's private-name check (every private TRL/transformers name grpo uses exists),
#   2. a one-step training smoke test on a tiny random model (scripts/smoke_train.py),
#      past grpo's start-up check, to learn whether this TRL works,
#   3. grpo's start-up check as a user meets it (accepted, or refused naming the versions).
# Not part of scripts/test.sh: .github/workflows/trl-range.yml runs it once per version.
#
#   bash scripts/trl_range.sh TRL_VERSION [TRANSFORMERS_VERSION]
#
# TRL_RANGE_VENV: the venv to create (default: a new folder under ${TMPDIR:-/tmp}); it must
# not exist: nothing of another environment is seen. The last line is the table row:
#   TRL_RANGE | trl 1.16.0 | transformers 5.24.0 | private names pass | smoke pass | start accepted
# The exit code is 0 when the row is consistent (passing versions accepted at start, failing
# ones refused), 1 otherwise.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bash scripts/trl_range.sh TRL_VERSION [TRANSFORMERS_VERSION]" >&2
  exit 2
fi
trl_version=$1
transformers_version=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
venv=${TRL_RANGE_VENV:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-trl-XXXXXX")/venv}
if [ -e "$venv/bin/python" ]; then
  echo "trl_range: $venv already exists; give a new TRL_RANGE_VENV" >&2
  exit 2
fi
log=$(dirname "$venv")/trl_range.log
echo "trl_range: trl $trl_version${transformers_version:+, transformers $transformers_version} in $venv (log: $log)"

"$PYTHON" -m venv "$venv"
pip() { "$venv/bin/python" -m pip --disable-pip-version-check -q "$@" >>"$log" 2>&1; }
# the CPU build of torch first, so that nothing pulls a CUDA one
pip install "torch==2.13.0"
pip install "$repo/packages/grpo-core" "$repo/packages/grpo-rewards-math" "$repo/packages/grpo-rewards-format" \
  "$repo/packages/grpo-datasets" "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
# then the version under test, whatever grpo-core declares (pip notes the conflict and installs it)
pip install "trl==$trl_version" ${transformers_version:+"transformers==$transformers_version"}
installed() { "$venv/bin/python" -c "from importlib.metadata import version; print(version('$1'))"; }
trl_found=$(installed trl)
transformers_found=$(installed transformers)
echo "trl_range: installed trl $trl_found, transformers $transformers_found, torch $(installed torch)"

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
cd "$repo"
private=fail
if "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    "tests/train/test_trl_bound.py::test_every_private_name_grpo_uses_exists_in_the_installed_trl" \
    "tests/core/test_trl_integration.py::test_composed_reward_runs_in_a_bare_grpo_trainer" 2>&1 | tee -a "$log" | tail -3; then
  private=pass
fi
work=$(dirname "$venv")/smoke
cd "$(dirname "$venv")"  # the smoke run sees no checkout
smoke=fail
if "$venv/bin/python" "$repo/scripts/smoke_train.py" --any-trl --workdir "$work" 2>&1 | tee -a "$log" | tail -1 | grep -q "^SMOKE ok"; then
  smoke=pass
fi
tail -1 "$log"
start=$("$venv/bin/python" - <<'EOF'
from grpo_core.errors import ConfigError
from grpo_core.run.prepare import check_versions
try:
    check_versions()
    print("accepted")
except ConfigError as exc:
    print(f"refused: {exc}")
EOF
)
echo "TRL_RANGE | trl $trl_found | transformers $transformers_found | private names $private | smoke $smoke | start ${start%%:*}"
echo "trl_range: start check: $start"
works=$([ "$private" = pass ] && [ "$smoke" = pass ] && echo yes || echo no)
accepted=$([ "$start" = accepted ] && echo yes || echo no)
if [ "$works" != "$accepted" ]; then
  echo "trl_range: INCONSISTENT: works=$works but the start check says ${start%%:*}; fix TESTED in" \
    "grpo_core/run/prepare.py and the bounds in packages/grpo-core/pyproject.toml" >&2
  exit 1
fi
