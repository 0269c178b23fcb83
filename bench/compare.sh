#!/usr/bin/env bash
# Benchmark: `envdoctor compare` against peers measured in the same run. Not run in CI.
#
#   bench/compare.sh                 # pair of 20,000-distribution snapshots, fleet of 1,000
#   RUNS=9 PAIR_DISTS=20000 FLEET_N=1000 bench/compare.sh
#
# The inputs are written by `examples/compare_gen.rs` (valid snapshots built from the Snapshot
# types, fixed seed): see that file for what differs between them. Timings are warm-cache wall
# medians of RUNS runs, pinned to CORES with taskset. Peers on the same files:
#   pair:  `cmp a b` (byte equality: the lower bound of reading both files),
#          `diff <(jq -S . a) <(jq -S . b)` (a JSON diff, the usual ad-hoc answer),
#          `python3 -c json.load` of both files (parsing only, the floor of any JSON tool);
#   fleet: `python3 -c json.load` of every file, and `jq -c . *.json` (parse + print).
set -euo pipefail

cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/envdoctor-compare-bench}
RUNS=${RUNS:-5}
PAIR_DISTS=${PAIR_DISTS:-20000}
FLEET_N=${FLEET_N:-1000}
CORES=${CORES:-0,1}
PIN=""
if command -v taskset >/dev/null; then PIN="taskset -c $CORES"; fi

cargo build --release --quiet --bin envdoctor --example compare_gen
BIN=$PWD/target/release/envdoctor
STAMP="$WORK/.done-$PAIR_DISTS-$FLEET_N"
if [[ ! -f $STAMP ]]; then
  rm -rf "$WORK"
  target/release/examples/compare_gen "$WORK" "$PAIR_DISTS" "$FLEET_N"
  touch "$STAMP"
fi
A=$WORK/pair/a.json
B=$WORK/pair/b.json

# measure CMD...: "WALL_MS CPU_MS", the medians of RUNS runs (CPU = user + sys, children
# included). Exit codes are ignored: diff-like tools exit 1 on a difference. On a shared box
# the wall time carries the load of others; the CPU time does not.
measure() {
  local walls=() cpus=() s e t
  t=$(mktemp)
  "$@" >/dev/null 2>&1 || true # warm-up
  for _ in $(seq "$RUNS"); do
    s=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$t" "$@" >/dev/null 2>&1 || true
    e=$(date +%s%N)
    walls+=($(((e - s) / 1000000)))
    cpus+=("$(tail -n 1 "$t" | awk '{ printf "%d", ($1 + $2) * 1000 }')")
  done
  rm -f "$t"
  local mid=$(((RUNS + 1) / 2))
  echo "$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "${mid}p") $(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "${mid}p")"
}

row() { # row LABEL "WALL CPU" "BASE_WALL BASE_CPU"
  read -r w c <<<"$2"
  read -r bw bc <<<"$3"
  printf '| %-52s | %7s | %7s | %6s | %6s |\n' "$1" "$w" "$c" \
    "$(awk -v a="$w" -v b="$bw" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }')" \
    "$(awk -v a="$c" -v b="$bc" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }')"
}
HEAD="| what | wall ms | CPU ms | envdoctor / this (wall) | (CPU) |
|---|---|---|---|---|"

echo "pair: $(du -h "$A" | cut -f1) + $(du -h "$B" | cut -f1), $PAIR_DISTS distributions each; medians of $RUNS runs, cores $CORES, load $(cut -d' ' -f1-3 /proc/loadavg)"
ED=$(measure $PIN "$BIN" compare "$A" "$B" --format json)
ED_TEXT=$(measure $PIN "$BIN" compare "$A" "$B")
CMP=$(measure $PIN cmp "$A" "$B")
PYL=$(measure $PIN python3 -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' "$A" "$B")
echo "$HEAD"
row "envdoctor compare --format json" "$ED" "$ED"
row "envdoctor compare (text)" "$ED_TEXT" "$ED"
row "cmp a b" "$CMP" "$ED"
row "python3 json.load of both" "$PYL" "$ED"
if command -v jq >/dev/null; then
  JQ=$(measure $PIN bash -c 'diff <(jq -S . "$1") <(jq -S . "$2")' _ "$A" "$B")
  row "diff <(jq -S . a) <(jq -S . b)" "$JQ" "$ED"
fi

echo
echo "fleet: $FLEET_N snapshots, $(du -sh "$WORK/fleet" | cut -f1); load $(cut -d' ' -f1-3 /proc/loadavg)"
FL=$(measure $PIN "$BIN" compare "$WORK"/fleet/*.json --format json)
FL_PY=$(measure $PIN python3 -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' "$WORK"/fleet/*.json)
echo "$HEAD"
row "envdoctor compare (fleet) --format json" "$FL" "$FL"
row "python3 json.load of every file" "$FL_PY" "$FL"
if command -v jq >/dev/null; then
  FL_JQ=$(measure $PIN jq -c . "$WORK"/fleet/*.json)
  row "jq -c . over every file" "$FL_JQ" "$FL"
fi
echo
echo "targets: pair < 100 ms (wall/CPU ms: $ED), fleet < 5000 ms ($FL)"
NR=$(measure $PIN "$BIN" compare "$A" "$B" --format json --no-rules)
echo "pair without rules (--no-rules): $NR (wall CPU ms)"
echo "where check --from spends its time on one side of the pair (--timings):"
{ "$BIN" check --from "$A" --format json --timings 2>&1 >/dev/null || true; } | sed 's/^/  /'
read -r ew _ <<<"$ED"
read -r pw _ <<<"$PYL"
awk -v e="$ew" -v p="$pw" 'BEGIN { printf "ratio python json.load of both / envdoctor compare with rules (pair): %.2fx (%d ms vs %d ms)\n", p / e, e, p }'
