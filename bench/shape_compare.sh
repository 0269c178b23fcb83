#!/usr/bin/env bash
# Behaviour check for refactors: run two envdoctor binaries over the same inputs and list every
# output that differs (issue 29: "compare old and new binaries' outputs").
#
#   bench/shape_compare.sh OLD_BINARY [NEW_BINARY]     # NEW default: target/debug/envdoctor
#
# Inputs: every fixture machine (`check` text and JSON, `snapshot`, `report`), every saved
# snapshot (`check --from` text and JSON, `compare` of the pair and of the fleet in text,
# Markdown and JSON), every log under fixtures/logs (`diagnose` text and JSON on an empty machine,
# and JSON on the saved snapshot `a.json`), every shipped rule (`explain`), and
# `rules list`/`lint`/`test`. Both binaries run under the same clean environment with the same
# name (usage lines print argv[0]); the only masked fields are the clock (`collected_at`,
# diagnose's "the facts were collected at", durations). Prints one line per differing output
# and a unified diff of the first few; exits 0 when every output is the same, 1 otherwise.
# KEEP=1 keeps the work directory. CACHE=DIR keeps each binary's outputs in DIR/<its sha256> and
# reuses them on the next run (both sides took about 25 minutes of a loaded 2-core machine with
# debug builds). SAMPLE=N keeps every Nth log and rule (default 1: all of them; the diagnose
# logs of fixtures/logs/*.log on a.json are always all run). Reuse a CACHE only from complete
# runs: an interrupted run leaves partial outputs that read as differences.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$(readlink -f "$1")
NEW=$(readlink -f "${2:-target/debug/envdoctor}")
WORK=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/old" "$WORK/new" "$WORK/root" "$WORK/home" "$WORK/out"
cp "$OLD" "$WORK/old/envdoctor"
cp "$NEW" "$WORK/new/envdoctor"
for side in old new; do
  if [ -n "${CACHE:-}" ]; then
    h=$(sha256sum "$WORK/$side/envdoctor" | cut -c1-16)
    mkdir -p "$CACHE/$h"
    ln -s "$(readlink -f "$CACHE/$h")" "$WORK/out/$side"
  else
    mkdir -p "$WORK/out/$side"
  fi
done
REPO=$PWD

# One command per line: NAME<TAB>ARGS (ARGS split on spaces; no argument holds a space).
cmds() {
  local m s l id
  for m in fixtures/machines/*/; do
    m=${m%/}
    n=$(basename "$m")
    printf 'check-%s.txt\tcheck --root %s --no-load\n' "$n" "$m"
    printf 'check-%s.json\tcheck --root %s --no-load --format json\n' "$n" "$m"
    printf 'snapshot-%s.json\tsnapshot --root %s --no-load\n' "$n" "$m"
    printf 'report-%s.md\treport --root %s --no-load\n' "$n" "$m"
  done
  for s in fixtures/snapshots/compare/*.json; do
    n=$(basename "$s" .json)
    printf 'from-%s.txt\tcheck --from %s\n' "$n" "$s"
    printf 'from-%s.json\tcheck --from %s --format json\n' "$n" "$s"
  done
  local c=fixtures/snapshots/compare
  for f in text markdown json; do
    printf 'compare-ab.%s\tcompare %s/a.json %s/b.json --format %s\n' "$f" "$c" "$c" "$f"
    printf 'compare-fleet.%s\tcompare %s/fleet-1.json %s/fleet-2.json %s/fleet-3.json --format %s\n' \
      "$f" "$c" "$c" "$c" "$f"
  done
  find fixtures/logs -name '*.log' | sort | awk -v n="${SAMPLE:-1}" 'NR % n == 1 || n == 1' |
    while read -r l; do
    n=$(echo "$l" | tr '/' '_')
    printf 'diagnose-%s.txt\tdiagnose %s --no-load --root %s\n' "$n" "$l" "$WORK/root"
    printf 'diagnose-%s.json\tdiagnose %s --no-load --root %s --format json\n' "$n" "$l" "$WORK/root"
  done
  for l in fixtures/logs/*.log; do
    n=$(echo "$l" | tr '/' '_')
    printf 'diagnose-from-%s.json\tdiagnose %s --from %s/a.json --format json\n' "$n" "$l" "$c"
  done
  "$WORK/old/envdoctor" rules list --format json |
    python3 -c 'import json,sys; [print(r["id"]) for r in json.load(sys.stdin)["rules"]]' |
    awk -v n="${SAMPLE:-1}" 'NR % n == 1 || n == 1' |
    while read -r id; do
      printf 'explain-%s.txt\texplain %s\n' "$id" "$id"
    done
  for f in text json markdown; do printf 'rules-list.%s\trules list --format %s\n' "$f" "$f"; done
  printf 'rules-lint.txt\trules lint\n'
  printf 'rules-test.txt\trules test\n'
}

run_one() { # SIDE NAME ARGS...
  local side=$1 name=$2
  shift 2
  [ -e "$WORK/out/$side/$name.err" ] && return 0
  (cd "$REPO" && env -i PATH=/usr/bin:/bin HOME="$WORK/home" LANG=C.UTF-8 NO_COLOR=1 COLUMNS=100 \
    "$WORK/$side/envdoctor" "$@" >"$WORK/out/$side/$name" 2>"$WORK/out/$side/$name.err" </dev/null
    echo "exit $?" >>"$WORK/out/$side/$name.err") || true
  sed -i -E 's/"collected_at": *"[^"]*"/"collected_at": "T"/; s/collected at [0-9T:-]+Z/collected at T/; s/("(duration|elapsed)[a-z_]*"): *[0-9.]+/\1: 0/; s/[0-9]+(\.[0-9]+)? ?(ms|s)\b/N\2/g' \
    "$WORK/out/$side/$name" "$WORK/out/$side/$name.err"
}
export -f run_one
export WORK REPO

cmds >"$WORK/cmds.tsv"
echo "$(wc -l <"$WORK/cmds.tsv") commands, each with both binaries" >&2
while IFS=$'\t' read -r name args; do
  printf '%s\0%s\0%s\0' old "$name" "$args"
  printf '%s\0%s\0%s\0' new "$name" "$args"
done <"$WORK/cmds.tsv" |
  xargs -0 -n 3 -P "${JOBS:-2}" bash -c 'run_one "$0" "$1" $2'

differ=0
shown=0
for f in "$WORK"/out/old/*; do
  b=${f#"$WORK"/out/old/}
  # The work directory's name (in --root arguments) differs from run to run.
  sed -E 's#/tmp/tmp\.[A-Za-z0-9]+#WORK#g' "$f" >"$WORK/a"
  sed -E 's#/tmp/tmp\.[A-Za-z0-9]+#WORK#g' "$WORK/out/new/$b" >"$WORK/b"
  if ! cmp -s "$WORK/a" "$WORK/b"; then
    differ=$((differ + 1))
    echo "DIFFERS: $b"
    if [ "$shown" -lt "${SHOW:-5}" ]; then
      diff -u "$WORK/a" "$WORK/b" | head -"${LINES_SHOWN:-40}" || true
      shown=$((shown + 1))
    fi
  fi
done
total=$(find -L "$WORK/out/old" -type f | wc -l)
echo "$differ of $total outputs differ (stdout and stderr+exit of $(wc -l <"$WORK/cmds.tsv") commands)"
[ "$differ" -eq 0 ]
