#!/usr/bin/env bash
# Benchmark: how often `envdoctor diagnose` names the root cause the maintainers established, on
# the corpus of real error excerpts in fixtures/logs/corpus/ (see its README for the format).
# Each excerpt (its header lines removed) is diagnosed on an empty machine (`--root` on an empty
# directory, `--no-load`): the answer comes from the log alone, as for a pasted error.
#
#   bench/diagnose_corpus.sh [ENVDOCTOR_BINARY]     # default: target/debug/envdoctor
#
# top-1: the first diagnosis is the entry's `cause`; any-rank: the cause is among the candidates.
# Held out (every entry whose number is a multiple of 4, fixed before any symptom was written
# for the corpus) is reported separately from the rest. Exit 0; prints one line per part and
# the misses of the held-out part (MISSES=training: of the rest, for writing symptoms).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/debug/envdoctor}
[ -x "$BIN" ] || cargo build --quiet --bin envdoctor
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/root"
python3 - "$BIN" "$WORK" fixtures/logs/corpus/*.log <<'PY'
import concurrent.futures, json, os, re, subprocess, sys
binary, work, files = sys.argv[1], sys.argv[2], sys.argv[3:]
parts = {"training": [0, 0, 0], "held-out": [0, 0, 0]}
misses = []

def diagnose(path):
    number = int(re.match(r"(\d+)", os.path.basename(path)).group(1))
    head, body = {}, []
    for line in open(path, encoding="utf-8"):
        m = re.match(r"# (url|cause|framework|root-cause): (.*)", line)
        if m and not body:
            head[m.group(1)] = m.group(2).strip()
        else:
            body.append(line)
    part = "held-out" if number % 4 == 0 else "training"
    out = subprocess.run(
        [binary, "diagnose", "-", "--format", "json", "--no-load", "--root", f"{work}/root"],
        input="".join(body).encode(), capture_output=True)
    try:
        ranked = [d["rule"] for d in json.loads(out.stdout)["diagnoses"]]
    except Exception:
        ranked = []
    return path, head, part, ranked

with concurrent.futures.ThreadPoolExecutor(int(os.environ.get("JOBS", "2"))) as pool:
    results = list(pool.map(diagnose, files))
for path, head, part, ranked in results:
    p = parts[part]
    p[0] += 1
    p[1] += bool(ranked) and ranked[0] == head["cause"]
    p[2] += head["cause"] in ranked
    if not ranked or ranked[0] != head["cause"]:
        misses.append((part, f"  {os.path.basename(path)}: want {head['cause']}, got {ranked[:3]}"))
for name, (n, top1, anyr) in parts.items():
    print(f"{name:9} {n:4} entries  top-1 {top1:4} ({100*top1/max(n,1):5.1f} %)  any-rank {anyr:4} ({100*anyr/max(n,1):5.1f} %)")
# MISSES=training while writing symptoms: the held-out misses stay unread until the end.
show = os.environ.get("MISSES", "held-out")
print(f"{show} misses:")
print("\n".join(m for part, m in misses if part == show) or "  none")
PY
