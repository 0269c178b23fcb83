#!/bin/sh
# Write `envdoctor check --format prometheus` into node-exporter's textfile directory, atomically
# (a temporary file in the same directory, renamed), so the collector never reads half a file.
#
#   envdoctor-textfile.sh DIR [envdoctor check options]
#
# ENVDOCTOR names the binary (default: envdoctor on PATH). Findings do not fail the unit
# (--fail-on never): they are the metrics. Exit 2 when envdoctor cannot check; the old file is
# then kept, and envdoctor_last_run_seconds shows how stale it is.
set -u
dir=${1:?usage: envdoctor-textfile.sh DIR [envdoctor check options]}
shift
envdoctor=${ENVDOCTOR:-envdoctor}

tmp=$(mktemp "$dir/.envdoctor.prom.XXXXXX") || exit 2
if "$envdoctor" check --format prometheus --fail-on never "$@" >"$tmp"; then
  chmod 0644 "$tmp"
  mv -f "$tmp" "$dir/envdoctor.prom"
else
  rc=$?
  rm -f "$tmp"
  exit "$rc"
fi
