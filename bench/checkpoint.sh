#!/usr/bin/env bash
# Time the checkpoint probe on a 10 GiB TF checkpoint (2,560 tensors; real index, sparse data
# shard) and a 10 GiB safetensors file, both made by make_big_checkpoint.py in a temp dir.
# The probe reads only the index / header: time and peak memory must not grow with the data.
# Usage: bench/checkpoint.sh [N_TENSORS]   (default 2560 x 4 MiB = 10 GiB)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-2560}"
cargo build --release --quiet
BIN=target/release/envdoctor
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/machine/ckpt"
python3 bench/make_big_checkpoint.py "$TMP/machine/ckpt" "$N"
ls -lsh "$TMP/machine/ckpt"
# --root: an otherwise empty machine, so the other probes have nothing to do.
run() { "$BIN" snapshot --root "$TMP/machine" --checkpoint /ckpt -o "$TMP/snap.json"; }
run
python3 - "$TMP/snap.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for c in s["checkpoints"]:
    tf = c.get("tf") or {}
    st = c.get("safetensors") or {}
    print(c["format"], c["path"], "tensors:", tf.get("tensor_count", st.get("tensor_count", "-")),
          "short_shards:", tf.get("short_shards", []), "error:", c.get("error"))
assert not s["probe_errors"], s["probe_errors"]
PY
best=""
for i in 1 2 3 4 5; do
  s=$(date +%s%N); run; e=$(date +%s%N)
  ms=$(( (e - s) / 1000000 )); echo "run $i: ${ms} ms (whole snapshot: process start, all probes, JSON)"
  if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
done
echo "best: ${best} ms for $N tensors / $(( N * 4 / 1024 )) GiB"
if command -v /usr/bin/time >/dev/null; then
  /usr/bin/time -f "peak RSS: %M KiB" "$BIN" snapshot --root "$TMP/machine" --checkpoint /ckpt -o "$TMP/snap.json"
fi
