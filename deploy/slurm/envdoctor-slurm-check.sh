#!/bin/sh
# envdoctor as a Slurm node check: drains this node, with the finding as the reason, when
# envdoctor finds an error. Use it as (slurm.conf):
#
#   Prolog=/etc/slurm/envdoctor-slurm-check.sh              before each job on the node
#   HealthCheckProgram=/etc/slurm/envdoctor-slurm-check.sh  or on slurmd's health-check timer
#   HealthCheckInterval=600
#
# or call it from an NHC check. Arguments go to `envdoctor check` (e.g. --checkpoint DIR).
# Environment: ENVDOCTOR (the binary; default envdoctor on PATH), SCONTROL (default scontrol),
# ENVDOCTOR_FAIL_JOB=1 to also exit 1 (a failing Prolog makes Slurm requeue the job; it then
# also drains the node, with its own reason). Without it the script exits 0: the node is drained
# for new jobs and the job that is starting runs.
# When envdoctor itself cannot check (exit 2), the node is left alone and the reason is logged.
envdoctor=${ENVDOCTOR:-envdoctor}
scontrol=${SCONTROL:-scontrol}
node=${SLURMD_NODENAME:-$(hostname -s)}

err=$(mktemp) || exit 0
out=$("$envdoctor" check --format github "$@" 2>"$err")
rc=$?
case $rc in
  0)
    rm -f "$err"
    exit 0
    ;;
  1)
    rm -f "$err"
    # The first annotation is the most severe finding; its title is `rule-id: title`.
    title=$(printf '%s\n' "$out" | sed -n 's/^::[a-z]* [^:]*title=\([^,:]*\).*/\1/p' | head -n 1 |
      sed -e 's/%0D//g' -e 's/%0A/ /g' -e 's/%3A/:/g' -e 's/%2C/,/g' -e 's/%25/%/g')
    verdict=$(printf '%s\n' "$out" | tail -n 1)
    counts=${verdict#envdoctor: FAIL: }
    reason="envdoctor: $title [${counts% (*}]"
    reason=$(printf '%s' "$reason" | cut -b 1-200)
    "$scontrol" update NodeName="$node" State=DRAIN Reason="$reason"
    echo "$reason" >&2
    if [ "${ENVDOCTOR_FAIL_JOB:-0}" = 1 ]; then exit 1; fi
    exit 0
    ;;
  *)
    echo "envdoctor could not check $node (exit $rc): $(head -n 1 "$err")" >&2
    logger -t envdoctor "could not check $node (exit $rc): $(head -n 1 "$err")" 2>/dev/null
    rm -f "$err"
    exit 0
    ;;
esac
