#!/usr/bin/env bash
# The packages as a user gets them: build the sdist and the wheel (from the sdist) of every
# package with `build`, check that each wheel names and carries its license, install the
# wheels into a fresh venv from the files (their dependencies from the registry; torch's CPU
# build first), then, from an empty folder outside the repository and with nothing of it on
# the path, run `grpo rewards list`, `grpo plugins`, the reward contract suite on each plugin,
# a one-step training run on a tiny model and `grpo doctor`.
#
#   bash scripts/wheel_check.sh            # WHEEL_CHECK_DIR: where to work (default: a new temp folder)
#
# Not part of scripts/test.sh (it installs everything anew: minutes); .github/workflows/wheels.yml
# and the release workflow run it. The last line is `WHEELS ok: ...` (exit 0) or names what failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
PACKAGES=(grpo-core grpo-rewards-math grpo-rewards-format grpo-datasets grpo-rewards-code grpo-reasoning-gym
          grpo-rewards-judge)
work=${WHEEL_CHECK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-wheels-XXXXXX")}
mkdir -p "$work"
if [ -n "$(ls -A "$work")" ]; then
  echo "wheel_check: $work is not empty; give an empty or new WHEEL_CHECK_DIR" >&2
  exit 2
fi
work=$(cd "$work" && pwd)
case "$work/" in "$repo"/*) echo "wheel_check: $work is inside the repository; use a folder outside it" >&2; exit 2;; esac
dist="$work/dist"
fail() { echo "WHEELS failed: $*"; exit 1; }
quiet() { "$@" >>"$work/pip.log" 2>&1 || { tail -40 "$work/pip.log"; fail "$*"; }; }

echo "== 1/5 build: sdist, then the wheel from the sdist, for ${#PACKAGES[@]} packages"
"$PYTHON" -m venv "$work/tools"
quiet "$work/tools/bin/python" -m pip install -q --disable-pip-version-check "build>=1.2" "pyyaml>=6"
for p in "${PACKAGES[@]}"; do
  "$work/tools/bin/python" -m build --outdir "$dist" "$repo/packages/$p" >"$work/build-$p.log" 2>&1 \
    || { tail -40 "$work/build-$p.log"; fail "building $p (log: $work/build-$p.log)"; }
done
ls -1 "$dist"
wheels=("$dist"/*.whl)
sdists=("$dist"/*.tar.gz)
[ "${#wheels[@]}" = "${#PACKAGES[@]}" ] && [ "${#sdists[@]}" = "${#PACKAGES[@]}" ] \
  || fail "expected ${#PACKAGES[@]} wheels and ${#PACKAGES[@]} sdists, got ${#wheels[@]} and ${#sdists[@]}"

echo "== 2/5 each wheel's METADATA names its license file, and the wheel and sdist carry the full text"
"$work/tools/bin/python" - "$repo/LICENSE" "$dist" <<'EOF' || fail "license metadata"
import sys, tarfile, zipfile
from pathlib import Path
text = Path(sys.argv[1]).read_bytes()
bad = []
for wheel in sorted(Path(sys.argv[2]).glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        lines = meta.split("\n\n", 1)[0].splitlines()
        carried = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        ok = ("License-Expression: Apache-2.0" in lines and "License-File: LICENSE" in lines
              and len(carried) == 1 and z.read(carried[0]) == text)
    print(f"  {wheel.name}: {'License-Expression: Apache-2.0, License-File: LICENSE, ' + carried[0] if ok else 'MISSING'}")
    if not ok:
        bad.append(wheel.name)
for sdist in sorted(Path(sys.argv[2]).glob("*.tar.gz")):
    with tarfile.open(sdist) as t:
        found = [m for m in t.getnames() if m.count("/") == 1 and m.endswith("/LICENSE")]
        ok = len(found) == 1 and t.extractfile(found[0]).read() == text
    print(f"  {sdist.name}: {'LICENSE' if ok else 'MISSING LICENSE'}")
    if not ok:
        bad.append(sdist.name)
sys.exit(1 if bad else 0)
EOF

echo "== 3/5 a fresh venv: torch's CPU build, then the wheels from the files"
"$PYTHON" -m venv "$work/venv"
py="$work/venv/bin/python"
quiet "$py" -m pip install -q --disable-pip-version-check "torch==2.13.0"
quiet "$py" -m pip install -q --disable-pip-version-check "${wheels[@]}"
# the contract entries of docs/plugins.yaml (data the suite needs; no code of the repository)
"$work/tools/bin/python" - "$repo/docs/plugins.yaml" "$work/contracts.json" <<'EOF'
import json, sys, yaml
entries = yaml.safe_load(open(sys.argv[1]))["plugins"]
json.dump({e["name"]: e.get("contract") or {} for e in entries}, open(sys.argv[2], "w"))
EOF
cp "$repo/scripts/wheel_contract.py" "$repo/scripts/smoke_train.py" "$work/"

echo "== 4/5 from $work/run, nothing of the repository on the path"
mkdir "$work/run"
cd "$work/run"
unset PYTHONPATH GRPO_PLUGINS  # every installed plugin loads, as for a user
export PATH="$work/venv/bin:$PATH" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$py" - "$repo" "${PACKAGES[@]}" <<'EOF' || fail "the installed packages are not the wheels"
import json, sys
from importlib.metadata import distribution
repo = sys.argv[1]
inside = lambda path: path == repo or path.startswith(repo + "/")  # not /tmp/wc-work beside /tmp/wc
assert not [p for p in sys.path if inside(p)], sys.path
for name in sys.argv[2:]:
    d = distribution(name)
    url = json.loads(d.read_text("direct_url.json") or "{}")
    where = str(d.locate_file(""))
    assert url.get("url", "").endswith(".whl") and not url.get("dir_info", {}).get("editable"), (name, url)
    assert not inside(where), (name, where)
    print(f"  {name} {d.version}: from {url['url'].rsplit('/', 1)[-1]}, in {where}")
EOF
grpo --version
grpo rewards list || fail "grpo rewards list"
grpo plugins >"$work/plugins.json" || { cat "$work/plugins.json"; fail "grpo plugins"; }
"$py" -c "import json,sys; print('  plugins:', ', '.join(p['name'] + ' (' + p['distribution'] + ')' for p in json.load(open(sys.argv[1]))))" "$work/plugins.json"
"$py" "$work/wheel_contract.py" "$work/contracts.json" "${PACKAGES[@]:1}" | tee "$work/contract.log" \
  || fail "the reward contract suite"
"$py" "$work/smoke_train.py" --workdir "$work/smoke" | tee "$work/smoke.log" | tail -3
tail -1 "$work/smoke.log" | grep -q "^SMOKE ok" || fail "the one-step training run (log: $work/smoke.log)"

echo "== 5/5 grpo doctor"
grpo doctor | tee "$work/doctor.log" || fail "grpo doctor"
echo "WHEELS ok: ${#wheels[@]} wheels and ${#sdists[@]} sdists built, licensed, installed from the files and run" \
  "outside the repository ($(tail -1 "$work/contract.log" | cut -d' ' -f2-); $(tail -1 "$work/smoke.log"))"
