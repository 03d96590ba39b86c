#!/usr/bin/env bash
# One row of the TRL table (docs/trl-versions.md): install grpo and one TRL version (and,
# optionally, one transformers version) into a fresh venv of their own, then run
#   1. grpo's private-name check (every private TRL/transformers name grpo uses exists),
#   2. a bare trl.GRPOTrainer step with rewards composed by name (TRL alone, no grpo trainer),
#   3. a one-step training run on a tiny random model through `grpo train`
#      (scripts/smoke_train.py), past grpo's start-up check, to learn whether this TRL works,
#   4. grpo's start-up check as a user meets it (accepted, or refused naming the versions).
# Not part of scripts/test.sh: .github/workflows/trl-range.yml runs it once per version.
#
#   bash scripts/trl_range.sh TRL_VERSION [TRANSFORMERS_VERSION]
#
# TRL_RANGE_VENV: the venv to create (default: a new folder under ${TMPDIR:-/tmp}); it must not
# exist, so nothing of another environment is seen (TRL_RANGE_REUSE=1 re-runs the checks in
# one this script made before, with that TRL installed). The last lines are the table row,
#   TRL_RANGE | trl 1.16.0 | transformers 5.24.0 | private names pass | bare step pass | smoke pass | start accepted
# and, for a check that failed, its error. Exit 0 when the row is consistent (a version that
# passes every check is accepted at start, one that fails one is refused), 1 otherwise.
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
base=$(dirname "$venv")
log=$base/trl_range.log
installed() { "$venv/bin/python" -c "from importlib.metadata import version; print(version('$1'))"; }
if [ -e "$venv/bin/python" ] && [ "${TRL_RANGE_REUSE:-}" != 1 ]; then
  echo "trl_range: $venv already exists; give a new TRL_RANGE_VENV (or TRL_RANGE_REUSE=1)" >&2
  exit 2
fi
pip() { "$venv/bin/python" -m pip --disable-pip-version-check -q "$@" >>"$log" 2>&1; }
grpo_copy() {  # grpo's packages, copied (a build writes build/ folders: never into the checkout)
  rm -rf "$base/src"
  mkdir -p "$base/src"
  for p in grpo-core grpo-rewards-math grpo-rewards-format grpo-datasets; do
    cp -r "$repo/packages/$p" "$base/src/$p"
    rm -rf "$base/src/$p/build" "$base/src/$p"/src/*.egg-info
    echo "$base/src/$p"
  done
}
if [ -e "$venv/bin/python" ]; then
  [ "$(installed trl)" = "$trl_version" ] || { echo "trl_range: $venv has trl $(installed trl), not $trl_version" >&2; exit 2; }
  echo "trl_range: re-using $venv, grpo re-installed from this checkout (log: $log)"
  mapfile -t packages < <(grpo_copy)
  pip install --no-deps --force-reinstall "${packages[@]}"
else
  echo "trl_range: trl $trl_version${transformers_version:+, transformers $transformers_version} in $venv (log: $log)"
  mkdir -p "$base"
  "$PYTHON" -m venv "$venv"
  # the CPU build of torch first, so that nothing pulls a CUDA one
  pip install "torch==2.13.0"
  mapfile -t packages < <(grpo_copy)
  pip install "${packages[@]}" "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
  # then the version under test, whatever grpo-core declares (pip notes the conflict and installs it)
  pip install "trl==$trl_version" ${transformers_version:+"transformers==$transformers_version"}
fi
trl_found=$(installed trl)
transformers_found=$(installed transformers)
echo "trl_range: installed trl $trl_found, transformers $transformers_found, torch $(installed torch)"

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
errors=()
result=
check() {  # check NAME TEST: one pytest test of the repository's suite against this venv; sets result
  # (a generous time limit: a busy shared machine must not turn a row red)
  if (cd "$repo" && "$venv/bin/python" -m pytest -q -p no:cacheprovider -o timeout=1200 "$2" >"$base/$1.log" 2>&1); then
    result=pass
  else
    local why
    why=$(grep -m1 -E '^E +[A-Za-z]*(Error|Exception)|^\+{5,} Timeout' "$base/$1.log" | sed 's/^E *//' | cut -c1-200 || true)
    errors+=("$1: ${why:-see $base/$1.log}")
    result=fail
  fi
}
check private-names "tests/train/test_trl_bound.py::test_every_private_name_grpo_uses_exists_in_the_installed_trl"
private=$result
check bare-step "tests/core/test_trl_integration.py::test_composed_reward_runs_in_a_bare_grpo_trainer"
bare=$result
rm -rf "$base/smoke"
smoke=fail
# the smoke run sees no checkout: run from the venv's folder, the script copied there
cp "$repo/scripts/smoke_train.py" "$base/smoke_train.py"
if (cd "$base" && "$venv/bin/python" smoke_train.py --any-trl --workdir "$base/smoke" >"$base/smoke.log" 2>&1); then
  smoke=pass
else
  errors+=("smoke: $(tail -1 "$base/smoke.log" | cut -c1-200)")
fi
start=$(cd "$base" && "$venv/bin/python" - <<'PY'
from grpo_core.errors import ConfigError
from grpo_core.run.prepare import check_versions
try:
    check_versions()
    print("accepted")
except ConfigError as exc:
    print(f"refused: {exc}")
PY
)
echo "TRL_RANGE | trl $trl_found | transformers $transformers_found | private names $private | bare step $bare | smoke $smoke | start ${start%%:*}"
for line in ${errors[@]+"${errors[@]}"}; do echo "trl_range: $line"; done
echo "trl_range: start check: $start"
works=$([ "$private" = pass ] && [ "$bare" = pass ] && [ "$smoke" = pass ] && echo yes || echo no)
accepted=$([ "$start" = accepted ] && echo yes || echo no)
if [ "$works" != "$accepted" ]; then
  echo "trl_range: INCONSISTENT: the checks say works=$works but the start check says ${start%%:*}: fix TESTED in" \
    "grpo_core/run/versions.py, the bounds in packages/grpo-core/pyproject.toml and docs/trl-versions.md" >&2
  exit 1
fi
