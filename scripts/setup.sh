#!/usr/bin/env bash
# Installs grpo and everything it needs into .venv, from nothing. Idempotent:
# a second run only re-installs when a pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${GRPO_VENV:-.venv}
stamp="$VENV/.grpo-installed"

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
if [ -f "$stamp" ] && [ -z "$(find . -name pyproject.toml -not -path "./$VENV/*" -newer "$stamp" -print -quit)" ]; then
  exit 0
fi
# pip warns once per package about mirror folders it skips; keep the log readable.
pip() {
  set +e
  "$VENV/bin/python" -m pip --disable-pip-version-check "$@" 2>&1 | grep -v "is neither a file nor a directory"
  local rc=${PIPESTATUS[0]}
  set -e
  return "$rc"
}
echo "setup: installing torch (CPU build first, so nothing pulls a CUDA build)"
pip install -q "torch==2.13.0"
echo "setup: installing grpo packages, the example plugin and dev tools"
pip install -q \
  -e packages/grpo-core \
  -e packages/grpo-rewards-math \
  -e packages/grpo-rewards-format \
  -e packages/grpo-datasets \
  -e examples/grpo-acme \
  -e ".[dev]"
touch "$stamp"
echo "setup: done ($("$VENV/bin/grpo" --version))"
