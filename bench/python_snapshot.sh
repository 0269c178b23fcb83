#!/usr/bin/env bash
# Benchmark: `envdoctor snapshot` (Python probe) against `pip list --format=json`, `pip freeze` and the
# floor (`cat` of every METADATA), over synthetic venvs, in one run. Not run in CI.
#
#   bench/python_snapshot.sh            # 20 venvs x 500 dists, then 200 x 1000 (time + peak RSS)
#   SMALL_ONLY=1 bench/python_snapshot.sh
#
# Each venv is a real `python3 -m venv --without-pip --copies` tree (copied, so every venv's
# bin/python is its own file) whose site-packages gets synthetic `.dist-info` directories:
# METADATA with realistic headers (classifiers, Requires-Dist with markers, Project-URL) and a
# long-description body of 1-24 KiB, INSTALLER and RECORD. Every file is a real copy (no
# hardlinks), so page-cache sharing does not flatter anyone. Timings are warm-cache medians of
# 3 runs, pinned to 2 cores with taskset. envdoctor is found through PATH (one entry per venv)
# with `--root` set to the bench directory.
set -euo pipefail

cd "$(dirname "$0")/.."
REPO=$PWD
WORK=${WORK:-/tmp/envdoctor-bench}
SMALL_N=${SMALL_N:-20}
SMALL_M=${SMALL_M:-500}
BIG_N=${BIG_N:-200}
BIG_M=${BIG_M:-1000}
CORES=${CORES:-0,1}
RUNS=${RUNS:-3}
PIN="$(command -v taskset) -c $CORES"

# BIN=path runs that binary instead of building one (to compare builds on the same load).
if [[ -z ${BIN:-} ]]; then
  cargo build --release --quiet
  BIN=$REPO/target/release/envdoctor
fi
PY=${PYTHON:-python3}

# synth ROOT N M: N venvs with M distributions each under ROOT (skipped when already there).
synth() {
  local root=$1 n=$2 m=$3
  if [[ -f $root/.done ]]; then return; fi
  rm -rf "$root"
  mkdir -p "$root"
  "$PY" -m venv --without-pip --copies "$root/.template"
  "$PY" - "$root" "$n" "$m" <<'EOF'
import os, random, shutil, sys, glob
root, n, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(20261121)
tmpl = os.path.join(root, ".template")
lib = glob.glob(os.path.join(tmpl, "lib", "python3.*"))[0]
pyxy = os.path.basename(lib)
# One interpreter per venv, as in a default venv: python3 and python3.X link to python.
b = os.path.join(tmpl, "bin")
for alias in ("python3", pyxy):
    if os.path.lexists(os.path.join(b, alias)):
        os.remove(os.path.join(b, alias))
    os.symlink("python", os.path.join(b, alias))
words = "tensor cuda model train data loader graph kernel fast tiny py lib util core net vision text audio".split()
classifiers = [
    "Development Status :: 5 - Production/Stable", "Intended Audience :: Developers",
    "License :: OSI Approved :: MIT License", "Operating System :: OS Independent",
    "Programming Language :: Python :: 3", "Programming Language :: Python :: 3.9",
    "Programming Language :: Python :: 3.10", "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12", "Topic :: Scientific/Engineering :: Artificial Intelligence",
    "Topic :: Software Development :: Libraries :: Python Modules", "Typing :: Typed",
]
def dists(site, count, seed):
    r = random.Random(seed)
    for j in range(count):
        name = f"{r.choice(words)}-{r.choice(words)}-{j}"
        ver = f"{r.randint(0, 30)}.{r.randint(0, 40)}.{r.randint(0, 20)}" + r.choice(["", "", "", "+cu121", "rc1", ".post1"])
        d = os.path.join(site, f"{name.replace('-', '_')}-{ver}.dist-info")
        os.makedirs(d)
        h = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {ver}",
             f"Summary: {' '.join(r.choice(words) for _ in range(8))}",
             f"Home-page: https://example.org/{name}", "Author: Some Body",
             "Author-email: some.body@example.org", "License: MIT"]
        h += [f"Project-URL: {k}, https://example.org/{name}/{k.lower()}" for k in ("Documentation", "Source", "Tracker")]
        h += [f"Classifier: {c}" for c in r.sample(classifiers, r.randint(4, len(classifiers)))]
        h.append("Requires-Python: >=3.8")
        for k in range(r.randint(0, 8)):
            marker = r.choice(["", "", f"; extra == \"{r.choice(words)}\"", "; python_version < \"3.11\"", "; sys_platform == \"linux\""])
            h.append(f"Requires-Dist: {r.choice(words)}-{r.choice(words)}>={r.randint(0,9)}.{r.randint(0,9)}{marker}")
        h.append("Description-Content-Type: text/markdown")
        body_len = int(min(24 * 1024, max(1024, r.lognormvariate(8.3, 0.8))))
        para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. "
        body = (para * (body_len // len(para) + 1))[:body_len]
        with open(os.path.join(d, "METADATA"), "w") as f:
            f.write("\n".join(h) + "\n\n# " + name + "\n\n" + body + "\n")
        with open(os.path.join(d, "INSTALLER"), "w") as f:
            f.write("pip\n")
        with open(os.path.join(d, "RECORD"), "w") as f:
            f.write(f"{name.replace('-', '_')}/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n")
for i in range(n):
    v = os.path.join(root, f"v{i:03d}")
    shutil.copytree(tmpl, v, symlinks=True)
    dists(os.path.join(v, "lib", pyxy, "site-packages"), m, i)
EOF
  touch "$root/.done"
}

venv_path() { # PATH with one bin/ per venv, as machine paths inside the root
  local n=$1 p="" i
  for ((i = 0; i < n; i++)); do p+="/v$(printf %03d $i)/bin:"; done
  echo "${p%:}"
}

now() { date +%s.%N; }

# median of RUNS timings of a command (seconds)
timeit() {
  local -a ts=()
  local i t0 t1
  "$@" >/dev/null 2>&1 || true # warm the cache
  for ((i = 0; i < RUNS; i++)); do
    t0=$(now)
    "$@" >/dev/null 2>&1
    t1=$(now)
    ts+=("$(echo "$t1 - $t0" | bc -l)")
  done
  printf '%s\n' "${ts[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p"
}

envdoctor_run() { # root n
  $PIN env -i PATH="$(venv_path "$2")" HOME=/nonexistent "$BIN" snapshot --root "$1" --deadline 600
}
pip_run() { # root n
  local i
  for ((i = 0; i < $2; i++)); do
    $PIN "$PY" -m pip list --format=json --disable-pip-version-check \
      --path "$(echo "$1"/v$(printf %03d $i)/lib/python3.*/site-packages)"
  done
}
freeze_run() { # root n
  local i
  for ((i = 0; i < $2; i++)); do
    $PIN "$PY" -m pip freeze --all --disable-pip-version-check \
      --path "$(echo "$1"/v$(printf %03d $i)/lib/python3.*/site-packages)"
  done
}
floor_run() { # root
  find "$1" -path '*.dist-info/METADATA' -print0 | $PIN xargs -0 cat
}
floor_cat_only() { # list file
  $PIN xargs -0 cat <"$1"
}

machine() {
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -sr), $(df -T "$WORK" | awk 'NR==2{print $2}')"
}

mkdir -p "$WORK"
echo "machine: $(machine)"
echo "python: $($PY --version 2>&1), pip $($PY -m pip --version | cut -d' ' -f2)"
echo "envdoctor: $($BIN --version)"

small=$WORK/small-${SMALL_N}x${SMALL_M}
synth "$small" "$SMALL_N" "$SMALL_M"
# Sanity: envdoctor must see every synthetic distribution.
count=$(envdoctor_run "$small" "$SMALL_N" | "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(sum(len(p["packages"]) for p in s["pythons"]))')
echo "envdoctor sees $count distributions (expected $((SMALL_N * SMALL_M)))"
find "$small" -path '*.dist-info/METADATA' -print0 >"$WORK/metadata.list"

t_env=$(timeit envdoctor_run "$small" "$SMALL_N")
t_floor=$(timeit floor_run "$small")
t_cat=$(timeit floor_cat_only "$WORK/metadata.list")
t_pip=$(timeit pip_run "$small" "$SMALL_N")
t_freeze=$(timeit freeze_run "$small" "$SMALL_N")
echo
echo "== ${SMALL_N} venvs x ${SMALL_M} distributions (median of $RUNS, warm cache, taskset -c $CORES)"
printf '%-44s %8.3f s\n' "envdoctor snapshot --root" "$t_env"
printf '%-44s %8.3f s\n' "pip list --format=json --path (per venv)" "$t_pip"
printf '%-44s %8.3f s\n' "pip freeze --all --path (per venv)" "$t_freeze"
printf '%-44s %8.3f s\n' "floor: find + cat every METADATA" "$t_floor"
printf '%-44s %8.3f s\n' "floor: cat every METADATA (list given)" "$t_cat"
printf '%-44s %8.1fx\n' "pip list / envdoctor" "$(echo "$t_pip / $t_env" | bc -l)"
printf '%-44s %8.1fx\n' "pip freeze / envdoctor" "$(echo "$t_freeze / $t_env" | bc -l)"
printf '%-44s %8.2fx\n' "envdoctor / (find + cat)" "$(echo "$t_env / $t_floor" | bc -l)"
printf '%-44s %8.2fx\n' "envdoctor / cat" "$(echo "$t_env / $t_cat" | bc -l)"

if [[ -z ${SMALL_ONLY:-} ]]; then
  big=$WORK/big-${BIG_N}x${BIG_M}
  synth "$big" "$BIG_N" "$BIG_M"
  envdoctor_run "$big" "$BIG_N" >/dev/null # warm
  t_big=$(timeit envdoctor_run "$big" "$BIG_N")
  rss=$(/usr/bin/time -v $PIN env -i PATH="$(venv_path "$BIG_N")" HOME=/nonexistent "$BIN" snapshot \
    --root "$big" --deadline 600 2>&1 >/dev/null | awk -F: '/Maximum resident/{gsub(/ /,"",$2); print $2}')
  bytes=$(envdoctor_run "$big" "$BIG_N" | wc -c)
  t_bigfloor=$(timeit floor_run "$big")
  echo
  echo "== ${BIG_N} venvs x ${BIG_M} distributions"
  printf '%-44s %8.3f s\n' "envdoctor snapshot --root (wall)" "$t_big"
  printf '%-44s %8d MiB\n' "envdoctor peak RSS" "$((rss / 1024))"
  printf '%-44s %8d MiB\n' "snapshot JSON size" "$((bytes / 1024 / 1024))"
  printf '%-44s %8.3f s\n' "floor: find + cat every METADATA" "$t_bigfloor"
fi
echo
echo "where the time goes (envdoctor snapshot --timings, ${SMALL_N} x ${SMALL_M}, one run):"
$PIN env -i PATH="$(venv_path "$SMALL_N")" HOME=/nonexistent "$BIN" snapshot --root "$small" \
  --deadline 600 --timings 2>&1 >/dev/null | sed 's/^/  /'
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'ratio pip list / envdoctor snapshot (%d x %d): %.1fx\n' "$SMALL_N" "$SMALL_M" "$(echo "$t_pip / $t_env" | bc -l)"
printf 'ratio pip freeze / envdoctor snapshot (%d x %d): %.1fx\n' "$SMALL_N" "$SMALL_M" "$(echo "$t_freeze / $t_env" | bc -l)"
