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
# The code rewards' sandbox (grpo-rewards-code) uses bubblewrap when it is there and falls
# back to unshare or resource limits without it: install it when we can, never fail on it.
if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    as_root=""
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo -n"
  else
    as_root="no"
  fi
  if [ "$as_root" != "no" ]; then
    echo "setup: installing bubblewrap (the code rewards' sandbox)"
    { $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } \
      >/dev/null 2>&1 || echo "setup: could not install bubblewrap; the code rewards will use unshare or rlimits"
  else
    echo "setup: bubblewrap is missing and there is no root or sudo to install it; the code rewards will use unshare or rlimits"
  fi
fi
# grpo view's browser tests drive Debian's chromium with Playwright (never a downloaded browser):
# install it when we can, never fail on it (the tests skip without it).
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
    as_root=$([ "$(id -u)" = 0 ] && echo "" || echo "sudo -n")
    echo "setup: installing chromium (grpo view's browser tests)"
    { $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
      >/dev/null 2>&1 || echo "setup: could not install chromium; grpo view's browser tests will be skipped"
  else
    echo "setup: chromium is missing and there is no root or sudo to install it; grpo view's browser tests will be skipped"
  fi
fi
echo "setup: installing torch (CPU build first, so nothing pulls a CUDA build)"
pip install -q "torch==2.13.0"
# grpo-rewards-judge[serve] brings transformers[serving] (FastAPI): tests/judge serve a tiny judge
# with `transformers serve`, in the same resolve as grpo-core's transformers pin
echo "setup: installing grpo packages, the example plugin and dev tools"
pip install -q \
  -e packages/grpo-core \
  -e packages/grpo-rewards-math \
  -e packages/grpo-rewards-format \
  -e packages/grpo-datasets \
  -e packages/grpo-rewards-code \
  -e packages/grpo-reasoning-gym \
  -e "packages/grpo-rewards-judge[serve]" \
  -e examples/grpo-acme \
  -e ".[dev]"
# OpenRLHF's remote-reward client and experience builder, verl's reward loader and managers:
# tests/serve runs grpo serve and compute_score through them. Their own code only, without
# their training stacks (vLLM, DeepSpeed, flash-attn, CUDA torch): what their reward paths
# import. verl's DataProto imports Ray at its top, so Ray comes too (core only, no extras).
echo "setup: installing OpenRLHF 0.11.2 and verl 0.9.1 (their reward code, not their training stacks)"
pip install -q --no-deps "openrlhf==0.11.2" "verl==0.9.1" "ray==2.55.0" "tensordict==0.10.0" "pyvers==0.1.0" \
  "omegaconf==2.4.0" "codetiming==1.4.0" "pylatexenc==2.11" "cloudpickle==3.1.3"
pip install -q "aiohttp==3.14.5" "msgpack==1.2.4" "protobuf==7.36.2" "orjson==3.13.0"
touch "$stamp"
echo "setup: done ($("$VENV/bin/grpo" --version))"
