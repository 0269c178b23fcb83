#!/usr/bin/env bash
# Benchmark: `envdoctor diagnose` on a 100 MB training log against `grep -E` with every symptom
# regex of the shipped pack (the floor of "scan a log for known error texts"), in the same run.
# Also: a 1 GiB log streamed through stdin, peak memory reported. Not run in CI.
#
#   bench/diagnose.sh              # 100 MB, 5 runs
#   SIZE_MB=100 RUNS=5 bench/diagnose.sh
#
# The log is ordinary training output (timestamps, absl prefixes, ANSI colour, `\r` progress
# bars, JSON metrics) with the real error logs of fixtures/logs/ spliced in at five places.
# envdoctor runs with `--root` on an empty directory and `--no-load`, so the time is the scan,
# the matching and the confirmation, not a probe of this machine. grep's regexes are the pack's
# symptoms with `\d` and `\s` spelled for ERE. Timings: warm-cache wall medians of RUNS runs.
# The last line is the ratio envdoctor / grep (wall).
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-100}
RUNS=${RUNS:-5}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# BIN=path/to/envdoctor times that binary instead (a debug build: say so with the figures).
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bin envdoctor
  BIN=$PWD/target/release/envdoctor
fi
mkdir -p "$WORK/root"

python3 - "$WORK/train.log" "$SIZE_MB" fixtures/logs/*.log <<'PY'
import sys, random
out, size, logs = sys.argv[1], int(sys.argv[2]) << 20, sys.argv[3:]
random.seed(7)
def noise(n):
    k = n % 7
    if k == 0: return f"2026-11-23 10:{(n//60)%60:02}:{n%60:02}.{n%1000000:06}: I tensorflow/core/common_runtime/executor.cc:1197] step {n} done\n"
    if k == 1: return f"Epoch {n%50}/50\r  10/500 [>....] - ETA: 1:02 - loss: 0.{n%10000:04}\r 500/500 [=====] - 12s 24ms/step - loss: 0.{n%10000:04} - accuracy: 0.91\n"
    if k == 2: return f"\x1b[32mINFO\x1b[0m:root:saving checkpoint to runs/exp1/ckpt-{n}\n"
    if k == 3: return f"[rank0]: iteration {n}: lr 3.0e-4, grad norm 1.{n%1000:03}, tokens/s {41000+n%1000}\n"
    if k == 4: return "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 8 worker processes in total.\n"
    if k == 5: return f"W1123 10:00:{n%60:02}.123456  4242 logging.cc:42] slow batch {n}\n"
    return f'{{"step": {n}, "loss": 0.{n%10000:04}, "eval/accuracy": 0.88}}\n'
errors = [open(p, encoding="utf-8", errors="replace").read() for p in logs]
marks = {int(size * f) for f in (0.1, 0.3, 0.5, 0.7, 0.9)}
written, n, block = 0, 0, []
with open(out, "w") as f:
    while written < size:
        line = noise(n); n += 1
        block.append(line); written += len(line)
        if any(written - len(line) < m <= written for m in marks):
            e = errors[n % len(errors)]; block.append(e); written += len(e)
        if len(block) > 10000:
            f.write("".join(block)); block = []
    f.write("".join(block))
PY

python3 - "$WORK/patterns.ere" rules/*.yaml <<'PY'
import sys, yaml
pats = set()
for path in sys.argv[2:]:
    for r in yaml.safe_load(open(path))["rules"]:
        for s in r.get("symptoms", []):
            pats.add(s["regex"] if isinstance(s, dict) else s)
with open(sys.argv[1], "w") as f:
    for p in sorted(pats):
        f.write(p.replace("\\d", "[0-9]").replace("\\s", "[[:space:]]") + "\n")
PY

measure() { # CMD... -> "WALL_MS MAXRSS_KB" medians
  local walls=() rss=() s e t
  t=$(mktemp)
  "$@" >/dev/null 2>&1 || true
  for _ in $(seq "$RUNS"); do
    s=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$t" "$@" >/dev/null 2>&1 || true
    e=$(date +%s%N)
    walls+=($(((e - s) / 1000000)))
    rss+=("$(tail -n 1 "$t")")
  done
  rm -f "$t"
  local mid=$(((RUNS + 1) / 2))
  echo "$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "${mid}p") $(printf '%s\n' "${rss[@]}" | sort -n | sed -n "${mid}p")"
}

LOG=$WORK/train.log
echo "log: $(du -m "$LOG" | cut -f1) MB, $(wc -l <"$LOG") lines; $(wc -l <"$WORK/patterns.ere") distinct symptom regexes; medians of $RUNS runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
read -r ed_ms ed_kb <<<"$(measure "$BIN" diagnose "$LOG" --no-load --root "$WORK/root" --format json)"
read -r gr_ms gr_kb <<<"$(measure grep -E -c -f "$WORK/patterns.ere" "$LOG")"
echo "| what | wall ms | peak RSS KiB |"
echo "|---|---|---|"
echo "| envdoctor diagnose (scan, match, confirm) | $ed_ms | $ed_kb |"
echo "| grep -E -c -f symptoms.ere | $gr_ms | $gr_kb |"
echo "top diagnosis: $("$BIN" diagnose "$LOG" --no-load --root "$WORK/root" --format json | python3 -c 'import json,sys; d=json.load(sys.stdin)["diagnoses"]; print(d[0]["rule"], d[0]["verdict"], "of", len(d), "candidates")')"

# 1 GiB through stdin (the 100 MB log ten times, ~1 GiB): streamed, bounded memory. GIB=0 skips
# it (a debug binary takes minutes).
if [ "${GIB:-1}" != 0 ]; then
GIB_T=$(mktemp)
s=$(date +%s%N)
for _ in $(seq $(( (1024 + SIZE_MB - 1) / SIZE_MB ))); do cat "$LOG"; done |
  /usr/bin/time -f '%M' -o "$GIB_T" "$BIN" diagnose - --no-load --root "$WORK/root" --format json >/dev/null || true
e=$(date +%s%N)
echo "1 GiB via stdin: $(((e - s) / 1000000)) ms wall, peak RSS $(tail -n 1 "$GIB_T") KiB"
rm -f "$GIB_T"
fi
awk -v a="$ed_ms" -v b="$gr_ms" 'BEGIN { printf "envdoctor/grep wall ratio: %.2f\n", a / b }'
