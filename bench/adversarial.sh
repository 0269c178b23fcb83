#!/usr/bin/env bash
# Wall time of `envdoctor check` on the adversarial machines of issue 16, against its deadline:
#   - a FIFO named *.yaml in a --rules directory (hung forever before);
#   - N Jupyter kernelspecs each naming its own venv (N = 1500, 3000; 8 s / 33 s at
#     --deadline 5 before);
#   - a 10,000-package snapshot with a user rule quadratic in the packages (85 s before).
# The goal is deadline + 0.5 s. Release build, warm cache, median of RUNS runs. Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
DEADLINE=${DEADLINE:-5}
WORK=${WORK:-/tmp/envdoctor-adversarial}
cargo build --release -q
BIN=$PWD/target/release/envdoctor
rm -rf "$WORK" && mkdir -p "$WORK"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # label, then the command
  local label=$1; shift
  local t
  t=$(for _ in $(seq "$RUNS"); do
        s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N)
        echo "$e - $s" | bc
      done | median)
  printf '%-48s %6.2f s  (deadline %s s)\n' "$label" "$t" "$DEADLINE"
}

python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
def machine(n):
    root = f"{work}/ks{n}"
    os.makedirs(f"{root}/usr/bin", exist_ok=True)
    os.makedirs(f"{root}/usr/lib/python3.11/lib-dynload", exist_ok=True)
    open(f"{root}/usr/bin/python3.11", "w").write("#!/bin/sh\n")
    os.chmod(f"{root}/usr/bin/python3.11", 0o755)
    open(f"{root}/usr/lib/python3.11/os.py", "w").close()
    for i in range(n):
        v = f"{root}/home/u/envs/e{i}"
        os.makedirs(f"{v}/bin", exist_ok=True)
        open(f"{v}/pyvenv.cfg", "w").write("home = /usr/bin\nversion = 3.11.9\n")
        os.symlink("/usr/bin/python3.11", f"{v}/bin/python")
        d = f"{root}/home/u/.local/share/jupyter/kernels/k{i}"
        os.makedirs(d, exist_ok=True)
        json.dump({"argv": [f"/home/u/envs/e{i}/bin/python", "-m", "ipykernel_launcher"],
                   "display_name": f"k{i}", "language": "python"}, open(f"{d}/kernel.json", "w"))
for n in (1500, 3000):
    machine(n)
PY
mkdir -p "$WORK/rules" && mkfifo "$WORK/rules/hang.yaml"
mkdir -p "$WORK/empty"
"$BIN" snapshot --no-load --root "$WORK/empty" > "$WORK/empty.json"

timed "FIFO in --rules (check --from)" "$BIN" check --from "$WORK/empty.json" --rules "$WORK/rules"
for n in 1500 3000; do
  timed "$n kernelspecs (check --no-load --deadline $DEADLINE)" \
    env -i HOME=/home/u PATH=/usr/bin:/bin "$BIN" check --root "$WORK/ks$n" --no-load --deadline "$DEADLINE" --format json
done

# A 10,000-package interpreter and a user rule quadratic in its packages.
V="$WORK/pk/v"
mkdir -p "$WORK/pk/usr/bin" "$WORK/pk/usr/lib/python3.11/lib-dynload" "$V/bin" \
  "$V/lib/python3.11/site-packages/six-1.16.0.dist-info"
printf '#!/bin/sh\n' > "$WORK/pk/usr/bin/python3.11"; chmod +x "$WORK/pk/usr/bin/python3.11"
touch "$WORK/pk/usr/lib/python3.11/os.py"
printf 'home = /usr/bin\nversion = 3.11.9\n' > "$V/pyvenv.cfg"
ln -sf /usr/bin/python3.11 "$V/bin/python"
printf 'Metadata-Version: 2.1\nName: six\nVersion: 1.16.0\n' \
  > "$V/lib/python3.11/site-packages/six-1.16.0.dist-info/METADATA"
env -i PATH=/v/bin:/usr/bin:/bin "$BIN" snapshot --no-load --root "$WORK/pk" | python3 -c '
import json, sys
s = json.load(sys.stdin)
py = next(p for p in s["pythons"] if p["path"] == "/v/bin/python")
one = py["packages"][0]
py["packages"] = [dict(one, name=f"pkg{i}") for i in range(10000)]
json.dump(s, open(sys.argv[1], "w"))' "$WORK/pk.json"
mkdir -p "$WORK/slowrules"
cat > "$WORK/slowrules/slow.yaml" <<'YAML'
rules:
  - id: quadratic-user-rule
    title: a name that is another package's version
    severity: info
    scope: interpreter
    when:
      any_in: python.packages
      as: a
      where:
        any_in: python.packages
        as: b
        where: {fact: b.name, equals: {fact: a.version}}
    message: "{{a.name}}"
    fix: none
YAML
timed "quadratic user rule, 10,000 packages (--from)" \
  "$BIN" check --from "$WORK/pk.json" --rules "$WORK/slowrules" --deadline "$DEADLINE"
