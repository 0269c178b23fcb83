#!/bin/sh
# envdoctor as a node-problem-detector custom plugin (envdoctor-plugin-monitor.json runs it).
#
# Protocol: exit 0 OK, 1 a problem, 2 unknown (envdoctor could not check); one line on stdout,
# at most ENVDOCTOR_NPD_MAX_OUTPUT bytes (keep it equal to the config's max_output_length).
# Arguments go to `envdoctor check` (the config passes `--root /host`). ENVDOCTOR names the
# binary (default: envdoctor on PATH).
envdoctor=${ENVDOCTOR:-envdoctor}
max=${ENVDOCTOR_NPD_MAX_OUTPUT:-80}

err=$(mktemp) || { echo "envdoctor plugin: mktemp failed"; exit 2; }
out=$("$envdoctor" check --format github "$@" 2>"$err")
rc=$?
case $rc in
  0)
    msg=$(printf '%s\n' "$out" | tail -n 1)
    ;;
  1)
    # The first annotation is the most severe finding; its title property is `rule-id: title`,
    # escaped as GitHub escapes properties (no raw `:` or `,` inside).
    title=$(printf '%s\n' "$out" | sed -n 's/^::[a-z]* [^:]*title=\([^,:]*\).*/\1/p' | head -n 1 |
      sed -e 's/%0D//g' -e 's/%0A/ /g' -e 's/%3A/:/g' -e 's/%2C/,/g' -e 's/%25/%/g')
    msg="envdoctor: $title"
    ;;
  *)
    msg="envdoctor could not check: $(head -n 1 "$err")"
    rc=2
    ;;
esac
rm -f "$err"
# One line, newline included, within the limit.
printf '%s' "$msg" | tr '\n' ' ' | cut -b "1-$((max - 1))"
exit $rc
