#!/usr/bin/env bash
# Installs envdoctor for the GitHub Action (action.yml) into its own venv, DIR, so it stays out
# of the environment it inspects. What it installs, the first one given:
#   ENVDOCTOR_WHEEL       a wheel's URL (https://, file://) or path
#   ENVDOCTOR_VERSION     a release, e.g. 0.1.0: the manylinux2014 wheel that
#                         .github/workflows/release.yml attached to GitHub release v0.1.0
#   ENVDOCTOR_PACKAGE     a pip requirement (envdoctor-ml on PyPI: after its first PyPI release)
#   ENVDOCTOR_ACTION_REF  the action's own ref, when it is a release tag (vX.Y.Z)
# When the package is missing it fails (exit 1) with a message that says what was asked for and
# what to give instead, as a GitHub error annotation.
# Usage: install.sh DIR   (ENVDOCTOR_PYTHON: the Python that makes the venv; default python3)
set -euo pipefail

venv=${1:?usage: install.sh DIR}
python=${ENVDOCTOR_PYTHON:-python3}
releases=${ENVDOCTOR_RELEASES:-https://github.com/envdoctor/envdoctor/releases/download}
wheel=${ENVDOCTOR_WHEEL:-}
version=${ENVDOCTOR_VERSION:-}
package=${ENVDOCTOR_PACKAGE:-}
ref=${ENVDOCTOR_ACTION_REF:-}

fail() {
  echo "::error title=envdoctor was not installed::$*"
  exit 1
}

if [[ -z $wheel && -z $version && -z $package ]]; then
  if [[ $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]]; then
    version=$ref
  else
    fail "say which envdoctor to install: \`version\` (a GitHub release, e.g. 0.1.0), \`wheel\` (a wheel's URL or path) or \`package\` (a pip requirement; envdoctor-ml is not on PyPI before its first PyPI release)"
  fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --quiet)
make_venv() {
  "$python" -m venv "$venv" || fail "$python could not make a venv at $venv (is python3-venv installed?)"
}

# Download URL to $tmp/NAME, or fail with WHY.
fetch() {
  local url=$1 name=$2 why=$3
  curl -fsSL --retry 3 -o "$tmp/$name" "$url" 2>"$tmp/curl.err" \
    || fail "$why ($url: $(tr '\n' ' ' <"$tmp/curl.err"))"
}

if [[ -z $wheel && -n $version ]]; then
  version=${version#v}
  arch=$(uname -m)
  case $arch in
    x86_64 | aarch64) ;;
    *) fail "envdoctor $version has no wheel for $arch (the releases are built for x86_64 and aarch64 Linux)" ;;
  esac
  name="envdoctor_ml-$version-py3-none-manylinux2014_$arch.manylinux_2_17_$arch.whl"
  fetch "$releases/v$version/$name" "$name" \
    "release v$version has no $name: is $version released? (https://github.com/envdoctor/envdoctor/releases)"
  wheel=$tmp/$name
fi

if [[ -n $wheel ]]; then
  case $wheel in
    http://* | https://* | file://*)
      name=$(basename "${wheel%%\?*}")
      [[ $name == *.whl ]] || name=envdoctor_ml-0-py3-none-any.whl
      fetch "$wheel" "$name" "the wheel could not be downloaded"
      wheel=$tmp/$name
      ;;
  esac
  [[ -f $wheel ]] || fail "no wheel at $wheel"
  make_venv
  "${pip[@]}" install --no-index "$wheel" >"$tmp/pip.log" 2>&1 \
    || fail "pip could not install $wheel: $(tail -n 3 "$tmp/pip.log" | tr '\n' ' ')"
else
  make_venv
  if ! "${pip[@]}" install "$package" >"$tmp/pip.log" 2>&1; then
    if grep -q "No matching distribution\|Could not find a version" "$tmp/pip.log"; then
      fail "pip found no '$package' on its index (envdoctor-ml is not on PyPI before its first PyPI release): give \`version\` (a GitHub release) or \`wheel\` instead"
    fi
    fail "pip could not install '$package': $(tail -n 3 "$tmp/pip.log" | tr '\n' ' ')"
  fi
fi

[[ -x $venv/bin/envdoctor ]] || fail "what was installed has no envdoctor command (is it envdoctor-ml?)"
"$venv/bin/envdoctor" --version || fail "$venv/bin/envdoctor does not run on this runner"
