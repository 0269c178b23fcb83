#!/usr/bin/env bash
# Benchmark: the IDE-drift rules on a machine with many Jupyter kernels (issue 12: the shipped
# IDE rules were quadratic in interpreters; 1,500 kernelspecs took 8 s). Not run in CI.
#
#   bench/ide_drift.sh                 # N=1500 kernels, P=60 distributions each
#   N=3000 P=100 BIN=target/debug/envdoctor bench/ide_drift.sh
#
# Builds a fake machine under $WORK: a shell venv on PATH and N kernel venvs (stand-in
# interpreters, never run), each with P `.dist-info` directories (one version differs from the
# shell's), and a kernelspec per venv. Snapshots it once, then times `envdoctor check --from` with the shipped
# pack (drift computed once by the probe, rules linear) and with the pre-issue-12 rules
# (nested `any_in: pythons`, fed through --rules, same ids), warm cache, median of $RUNS.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
N=${N:-1500}
P=${P:-60}
RUNS=${RUNS:-3}
WORK=${WORK:-/tmp/envdoctor-bench-ide}
if [[ -z "${BIN:-}" ]]; then
  cargo build --release --quiet
  BIN=$REPO/target/release/envdoctor
fi
ROOT=$WORK/m-$N-$P
if [[ ! -f $ROOT/.done ]]; then
  rm -rf "$ROOT"
  python3 - "$ROOT" "$N" "$P" <<'PY'
import os, sys
root, n, p = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def w(path, text):
    f = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(f), exist_ok=True)
    open(f, "w").write(text)
w("/usr/bin/python3.11", "#!/bin/sh\nexit 1\n"); os.chmod(os.path.join(root, "usr/bin/python3.11"), 0o755)
w("/usr/lib/python3.11/os.py", "")
os.makedirs(os.path.join(root, "usr/lib/python3.11/lib-dynload"), exist_ok=True)
def venv(prefix, bump):
    w(f"{prefix}/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.7\n")
    os.makedirs(os.path.join(root, prefix.lstrip("/"), "bin"), exist_ok=True)
    os.symlink("/usr/bin/python3.11", os.path.join(root, prefix.lstrip("/"), "bin/python"))
    for i in range(p):
        name = ["torch", "numpy"][i] if i < 2 else f"pkg{i}"
        v = "1.0.%d" % (1 if (bump and i == 1) else 0)
        w(f"{prefix}/lib/python3.11/site-packages/{name}-{v}.dist-info/METADATA",
          f"Metadata-Version: 2.1\nName: {name}\nVersion: {v}\n")
venv("/opt/shell", False)
for k in range(n):
    venv(f"/envs/k{k}", True)
    w(f"/home/u/.local/share/jupyter/kernels/k{k}/kernel.json",
      '{"argv": ["/envs/k%d/bin/python", "-m", "ipykernel_launcher"], "display_name": "k%d", "language": "python"}' % (k, k))
PY
  touch "$ROOT/.done"
fi
OLD=$WORK/old-ide-rules
mkdir -p "$OLD"
git -C "$REPO" show 837aa42:rules/python.yaml | python3 -c '
import sys
text = sys.stdin.read()
start = text.index("  - id: ide-interpreter-package-differs")
end = text.index("  - id: ide-interpreter-missing")
sys.stdout.write("rules:\n" + text[start:end])' > "$OLD/ide.yaml"
# The snapshot is taken once; the timings are rule evaluation on it (`check --from`).
SNAP=$WORK/snap-$N-$P.json
env -i PATH=/opt/shell/bin:/usr/bin:/bin HOME=/home/u "$BIN" snapshot --no-load --deadline 600 --root "$ROOT" -o "$SNAP"
run() {
  local label=$1; shift
  local times=()
  for _ in $(seq "$RUNS"); do
    local s e
    s=$(date +%s.%N)
    "$BIN" check --from "$SNAP" --format json "$@" >"$WORK/out.json" || true
    e=$(date +%s.%N)
    times+=("$(echo "$e - $s" | bc)")
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
  local fired
  fired=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"]; print(sum(1 for x in f if x["rule"].startswith("ide-interpreter-package")))' "$WORK/out.json")
  printf '%-28s N=%-5s P=%-4s median %6.2f s  (ide-interpreter-package-* findings: %s)\n' "$label" "$N" "$P" "$med" "$fired"
}
run "shipped (linear)"
run "pre-issue-12 rules" --rules "$OLD"
