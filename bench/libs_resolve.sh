#!/usr/bin/env bash
# Benchmark: resolve the whole CUDA family for three framework-like requesters with envdoctor's
# loader emulation (no load probes), beside `ldd` (the real loader) on the same requesters.
# Builds a synthetic machine in a temp dir with `cc`: every family library in a system toolkit
# dir (on LD_LIBRARY_PATH), in pip's site-packages/nvidia/*/lib and in a conda env; requesters
# shaped like torch (DT_RUNPATH into nvidia/*/lib), TensorFlow (DT_RPATH) and a jax plugin
# (DT_RUNPATH, conda). Also checks that every path envdoctor picks is the one ldd prints.
# Usage: bench/libs_resolve.sh [ROUNDS]   (release build of the example; ~1 min on 2 cores)
set -euo pipefail
ROUNDS=${1:-30}
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

SONAMES=(libcuda.so.1 libnvidia-ml.so.1 libcudart.so.12 libcublas.so.12 libcublasLt.so.12
  libcufft.so.11 libcurand.so.10 libcusolver.so.11 libcusparse.so.12 libnvrtc.so.12
  libnvJitLink.so.12 libcupti.so.12 libcudnn.so.9 libcudnn_graph.so.9
  libcudnn_engines_precompiled.so.9 libcudnn_engines_runtime_compiled.so.9
  libcudnn_heuristic.so.9 libcudnn_ops.so.9 libcudnn_cnn.so.9 libcudnn_adv.so.9
  libnccl.so.2 libnvinfer.so.10)
printf '%s\n' "${SONAMES[@]}" > "$T/sonames"
echo 'int f(void){return 0;}' > "$T/f.c"

pipdir() { # soname -> nvidia/<pkg>/lib
  case $1 in
    libcudart*) echo cuda_runtime;; libcublas*) echo cublas;; libcufft*) echo cufft;;
    libcurand*) echo curand;; libcusolver*) echo cusolver;; libcusparse*) echo cusparse;;
    libnvrtc*) echo cuda_nvrtc;; libnvJitLink*) echo nvjitlink;; libcupti*) echo cuda_cupti;;
    libcudnn*) echo cudnn;; libnccl*) echo nccl;; libnvinfer*) echo tensorrt_libs;;
    *) echo "";;
  esac
}
SITE=$T/venv/lib/python3.11/site-packages
for s in "${SONAMES[@]}"; do
  case $s in
    libcuda.so.1|libnvidia-ml.so.1)
      mkdir -p "$T/driver"; cc -shared -fPIC -Wl,-soname,$s -o "$T/driver/$s.580.65.06" "$T/f.c"
      ln -s "$s.580.65.06" "$T/driver/$s";;
    *)
      mkdir -p "$T/cuda-12.4/lib64" "$T/conda/lib"
      cc -shared -fPIC -Wl,-soname,$s -o "$T/cuda-12.4/lib64/$s.0.1" "$T/f.c"
      ln -s "$s.0.1" "$T/cuda-12.4/lib64/$s"
      cp "$T/cuda-12.4/lib64/$s.0.1" "$T/conda/lib/$s"
      d=$SITE/nvidia/$(pipdir "$s")/lib; mkdir -p "$d"; cp "$T/cuda-12.4/lib64/$s.0.1" "$d/$s";;
  esac
done
ln -s cuda-12.4 "$T/cuda"
NEEDS=()
for s in "${SONAMES[@]}"; do NEEDS+=("-l:$s"); done
LDIRS=(-L "$T/driver" -L "$T/cuda-12.4/lib64")
RUN=$(for p in $(ls "$SITE/nvidia"); do printf '$ORIGIN/../../nvidia/%s/lib:' "$p"; done)
mkdir -p "$SITE/torch/lib" "$SITE/tensorflow" "$T/conda/lib/python3.11/site-packages/jax_plugins/xla_cuda12"
cc -shared -fPIC -o "$SITE/torch/lib/libtorch_cuda.so" "$T/f.c" -Wl,--no-as-needed \
  -Wl,--enable-new-dtags -Wl,-rpath,"${RUN%:}" "${LDIRS[@]}" "${NEEDS[@]}"
RP=$(for p in $(ls "$SITE/nvidia"); do printf '$ORIGIN/../nvidia/%s/lib:' "$p"; done)
cc -shared -fPIC -o "$SITE/tensorflow/libtensorflow_framework.so.2" "$T/f.c" -Wl,--no-as-needed \
  -Wl,--disable-new-dtags -Wl,-rpath,"${RP%:}" "${LDIRS[@]}" "${NEEDS[@]}"
cc -shared -fPIC -o "$T/conda/lib/python3.11/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so" \
  "$T/f.c" -Wl,--no-as-needed -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../../../..' \
  "${LDIRS[@]}" "${NEEDS[@]}"
REQS=("$SITE/torch/lib/libtorch_cuda.so" "$SITE/tensorflow/libtensorflow_framework.so.2"
  "$T/conda/lib/python3.11/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so")
export LD_LIBRARY_PATH="$T/cuda/lib64:$T/driver"

if [ "${PROFILE:-release}" = release ]; then
  cargo build --release --quiet --example libs_resolve; BIN=target/release/examples/libs_resolve
else
  cargo build --quiet --example libs_resolve; BIN=target/debug/examples/libs_resolve
fi
OUT=$("$BIN" "$ROUNDS" "$T/sonames" "${REQS[@]}")
echo "$OUT" | grep '^timing'

# Agreement with the real loader (ldd) on every (requester, soname).
bad=0
for r in "${REQS[@]}"; do
  LDD=$(ldd "$r")
  while read -r _ req s path _; do
    [ "$req" = "$r" ] || continue
    real=$(echo "$LDD" | awk -v s="$s" '$1==s {print $3}')
    if [ "$real" != "$path" ]; then echo "DISAGREE $r $s envdoctor=$path ldd=$real"; bad=1; fi
  done <<< "$(echo "$OUT" | grep '^resolve')"
done
[ $bad = 0 ] && echo "agreement: every path equals ldd's ($(echo "$OUT" | grep -c '^resolve') resolutions)"
echo "found_via: $(echo "$OUT" | grep '^resolve' | awk '{print $5}' | sort | uniq -c | tr -s ' ' | tr '\n' ',')"

# ldd on the same three requesters (it maps and relocates every library).
times=()
for _ in $(seq "$ROUNDS"); do
  s=$(date +%s%N); ldd "${REQS[@]}" > /dev/null; e=$(date +%s%N)
  times+=($(( (e - s) / 1000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "ldd median_ms=$(awk "BEGIN{printf \"%.2f\", ${sorted[$(( ROUNDS / 2 ))]}/1000}") min_ms=$(awk "BEGIN{printf \"%.2f\", ${sorted[0]}/1000}")"
