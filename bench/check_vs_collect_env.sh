#!/usr/bin/env bash
# Benchmark: `envdoctor check` (every probe, load probe on) in the newest torch venv with its
# CUDA wheels, against `python -m torch.utils.collect_env` in the same venv, interleaved in one
# run (median of RUNS each), with a warm load cache (the repeated pre-job run) and without it. Also the load-probe child's peak RSS: its command line is taken
# from the real run (strace), then re-run alone under /usr/bin/time -v. Not run in CI.
#
#   bench/check_vs_collect_env.sh                 # VENV defaults to the cached torch==2.15.0 venv
#   RUNS=7 VENV=/path/to/venv bench/check_vs_collect_env.sh
#   BIN=/path/to/envdoctor bench/check_vs_collect_env.sh   # that binary, not a fresh build
#
# The venv is the one tests/common/pypi.rs cached_venv(&["torch==2.15.0"]) builds. The last
# line is the ratio (collect_env median / check median).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
VENV=${VENV:-$(ls -d "$HOME"/.cache/envdoctor-pypi/venvs/torch--2.15.0-* 2>/dev/null | head -n 1)}
if [[ -z $VENV || ! -x $VENV/bin/python ]]; then
  echo "no torch venv (build it with the pypi tests: cached_venv(&[\"torch==2.15.0\"]))" >&2
  exit 1
fi
# BIN=path runs that binary instead of building one (to compare builds on the same load).
if [[ -z ${BIN:-} ]]; then
  cargo build --release --quiet --bin envdoctor
  BIN=$PWD/target/release/envdoctor
fi
PROJ=$(mktemp -d)
trap 'rm -rf "$PROJ"' EXIT
# An activated venv, run from an empty project directory.
export VIRTUAL_ENV=$VENV PATH=$VENV/bin:$PATH
cd "$PROJ"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  venv: $VENV"
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
ms "$BIN" check >/dev/null; ms python -m torch.utils.collect_env >/dev/null # warm-up
E=() C=() P=() N=()
for _ in $(seq "$RUNS"); do
  E+=("$(ms "$BIN" check)")
  C+=("$(ms "$BIN" check --no-load-cache)")
  P+=("$(ms python -m torch.utils.collect_env)")
  N+=("$(ms "$BIN" check --no-load)")
done
e=$(median "${E[@]}") c=$(median "${C[@]}") p=$(median "${P[@]}") n=$(median "${N[@]}")
echo "envdoctor check (warm load cache): ${E[*]} ms (median $e)"
echo "envdoctor check --no-load-cache:   ${C[*]} ms (median $c)"
echo "envdoctor check --no-load:  ${N[*]} ms (median $n)"
echo "collect_env:                ${P[*]} ms (median $p)"
echo "where check's time goes (--timings, one run):"
{ "$BIN" check --no-load-cache --timings 2>&1 >/dev/null || true; } | sed "s/^/  /"
# The load child: its argv from a real run, then alone under /usr/bin/time.
if command -v strace >/dev/null; then
  strace -f -v -qq -s 4096 -e trace=execve -o "$PROJ/trace" "$BIN" check --no-load-cache >/dev/null 2>&1 || true
  line=$(grep -m1 '__load-child' "$PROJ/trace" || true)
  if [[ -n $line ]]; then
    # strace prints argv as a JSON-like list of quoted strings.
    mapfile -t argv < <(python3 -c 'import json, sys
line = sys.argv[1]
start = line.index("[")
arr, _ = json.JSONDecoder().raw_decode(line[start:])
print("\n".join(arr[1:]))' "$line")
    /usr/bin/time -f '%M' -o "$PROJ/rss" "$BIN" "${argv[@]}" >"$PROJ/child.out" 2>/dev/null || true
    echo "load child: $(((${#argv[@]} - 1) / 2)) libraries, $(wc -l <"$PROJ/child.out") answers, peak RSS $(($(tail -n1 "$PROJ/rss") / 1024)) MiB"
  else
    echo "load child: not started (nothing to load?)"
  fi
fi
/usr/bin/time -f '%M' -o "$PROJ/rss" "$BIN" check --no-load-cache >/dev/null 2>&1 || true
echo "check --no-load-cache, peak RSS of the process tree's largest member: $(($(tail -n1 "$PROJ/rss") / 1024)) MiB"
/usr/bin/time -f '%M' -o "$PROJ/rss" "$BIN" check >/dev/null 2>&1 || true
echo "check (warm), peak RSS of the process tree's largest member: $(($(tail -n1 "$PROJ/rss") / 1024)) MiB"
awk -v p="$p" -v c="$c" 'BEGIN { printf "ratio collect_env/check, cold load cache: %.1fx\n", p / c }'
awk -v p="$p" -v e="$e" 'BEGIN { printf "ratio collect_env/check (warm load cache, the pre-job run): %.1fx\n", p / e }'
