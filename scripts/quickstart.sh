#!/usr/bin/env bash
# Set up (if needed) and run the main job: GRPO on the embedded default
# (SmolLM2-135M-Instruct on the offline arithmetic set). Extra arguments are
# config overrides, e.g. --max_steps 10.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/grpo train examples/quickstart.yaml "$@"
