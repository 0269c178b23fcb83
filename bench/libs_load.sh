#!/usr/bin/env bash
# Benchmark: the load probe on the whole CUDA family (22 libraries compiled with `cc`, the
# version entry points exported where the family has one) in one load child, beside `ldd` on a
# requester that DT_NEEDs all of them (the real loader mapping the same files).
# Usage: bench/libs_load.sh [ROUNDS]   (PROFILE=release for a release build; default debug)
set -euo pipefail
ROUNDS=${1:-20}
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
declare -A FN=(
  [libcuda.so.1]="cuda:int cuDriverGetVersion(int*v){*v=12040;return 0;}"
  [libnvidia-ml.so.1]="-:int f(void){return 0;}"
  [libcudart.so.12]="cudart:int cudaRuntimeGetVersion(int*v){*v=12040;return 0;}"
  [libcublas.so.12]="cublas:int cublasGetProperty(int t,int*v){*v=t==0?12:t==1?4:5;return 0;}"
  [libcublasLt.so.12]="cublasLt:unsigned long cublasLtGetVersion(void){return 120405;}"
  [libcufft.so.11]="cufft:int cufftGetProperty(int t,int*v){*v=t==0?11:2;return 0;}"
  [libcurand.so.10]="curand:int curandGetProperty(int t,int*v){*v=t==0?10:3;return 0;}"
  [libcusolver.so.11]="cusolver:int cusolverGetProperty(int t,int*v){*v=t==0?11:6;return 0;}"
  [libcusparse.so.12]="cusparse:int cusparseGetProperty(int t,int*v){*v=t==0?12:3;return 0;}"
  [libnvrtc.so.12]="nvrtc:int nvrtcVersion(int*a,int*b){*a=12;*b=4;return 0;}"
  [libnvJitLink.so.12]="nvJitLink:int nvJitLinkVersion(unsigned*a,unsigned*b){*a=12;*b=4;return 0;}"
  [libcupti.so.12]="cupti:int cuptiGetVersion(unsigned*v){*v=22;return 0;}"
  [libcudnn.so.9]="cudnn:unsigned long cudnnGetVersion(void){return 90100;}"
  [libnccl.so.2]="nccl:int ncclGetVersion(int*v){*v=22105;return 0;}"
  [libnvinfer.so.10]="-:int f(void){return 0;}"
)
for s in libcudnn_graph.so.9 libcudnn_engines_precompiled.so.9 libcudnn_engines_runtime_compiled.so.9 \
  libcudnn_heuristic.so.9 libcudnn_ops.so.9 libcudnn_cnn.so.9 libcudnn_adv.so.9; do
  FN[$s]="-:int f(void){return 0;}"
done
mkdir -p "$T/lib"
ARGS=(); NEEDS=()
for s in "${!FN[@]}"; do
  fam=${FN[$s]%%:*}; code=${FN[$s]#*:}
  echo "$code" > "$T/$s.c"
  cc -shared -fPIC -Wl,-soname,"$s" -o "$T/lib/$s" "$T/$s.c"
  ARGS+=("$fam=$T/lib/$s"); NEEDS+=("-l:$s")
done
echo 'int g(void){return 0;}' > "$T/r.c"
cc -shared -fPIC -o "$T/requester.so" "$T/r.c" -Wl,--no-as-needed -L "$T/lib" "${NEEDS[@]}"
export LD_LIBRARY_PATH="$T/lib"
if [ "${PROFILE:-debug}" = release ]; then
  cargo build --release --quiet --bin envdoctor --example libs_load; D=target/release
else
  cargo build --quiet --bin envdoctor --example libs_load; D=target/debug
fi
"$D/examples/libs_load" "$D/envdoctor" "$ROUNDS" "${ARGS[@]}"
ts=()
for _ in $(seq "$ROUNDS"); do
  s=$(date +%s%N); ldd "$T/requester.so" > /dev/null; e=$(date +%s%N); ts+=($(( (e - s) / 1000 )))
done
sorted=($(printf '%s\n' "${ts[@]}" | sort -n))
echo "timing ldd libs=${#FN[@]} median_ms=$(awk "BEGIN{print ${sorted[$((ROUNDS / 2))]}/1000}") min_ms=$(awk "BEGIN{print ${sorted[0]}/1000}")"
