#!/usr/bin/env bash
# Long fuzz campaign over every parser (see fuzz/engine.rs): one target after another on one
# core, each for SECS seconds or EXECS executions, one line of figures per target (execs,
# panics, exec/s, slowest input), crashers under target/fuzz-crashes/.
#
#   bench/fuzz.sh                       # 60 s per target
#   SECS=600 bench/fuzz.sh metadata elf # chosen targets, 10 min each
#   EXECS=10000000 bench/fuzz.sh        # 10M executions per target
#
# Exit status 1 when any input panicked. Pinned to one CPU (taskset) when available, so a
# shared machine keeps its other cores.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-60}
cargo build --release --example fuzz -q
args=()
if [[ -n "${EXECS:-}" ]]; then args+=(--execs "$EXECS"); else args+=(--secs "$SECS"); fi
pin=()
if command -v taskset >/dev/null 2>&1; then pin=(taskset -c "${CPU:-0}"); fi
echo "== fuzz campaign $(date -u +%FT%TZ) ${args[*]} seed ${SEED:-24301}"
"${pin[@]}" nice -n 10 target/release/examples/fuzz "${args[@]}" --seed "${SEED:-24301}" \
  --crashes target/fuzz-crashes "$@"
