#!/usr/bin/env bash
# What a change that touches the GPU is checked with, on a machine with an NVIDIA GPU: README's two
# commands, the driver-API clients (cuda.core, cuda-python, numba-cuda) through NVIDIA's library and
# nvhcq's, ordering under another process's load, and the benchmarks that print nvhcq and libcuda
# side by side. Every step has a time limit; logs go to OUT, a line per step to OUT/summary.txt.
#   tools/device_check.sh [OUT] [BENCH_C KERN_CU]
# BENCH_C and KERN_CU: a driver-API benchmark (linked with -lcuda) and its kernels, built once and
# run unmodified against both libraries. Steps whose tools are missing say so and are skipped.
set -u
out=${1:-device-logs}
bench_c=${2:-}
kern_cu=${3:-}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
nvidia_lib=$(dirname "$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')" 2>/dev/null)
ours=$PWD/build-release/cuda

# step NAME SECONDS COMMAND...: runs it with its output in OUT/NAME.log, and says how it ended.
step() {
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  printf '%-28s rc=%-3s %4ss  %s\n' "$name" "$rc" "$(($(date +%s) - t0))" \
    "$(grep -v '^\s*$' "$out/$name.log" | tail -1 | cut -c1-100)" | tee -a "$summary"
  return $rc
}

skip() { printf '%-28s skipped: %s\n' "$1" "$2" | tee -a "$summary"; }

# ---- README's commands (build/ as README has it), and a Release build for the benchmarks ----
rm -rf build
step readme_main 900 bash -c 'cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j && ./build/nvhcq demo'
step readme_tests 1800 bash -c 'cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug && cmake --build build -j && ctest --test-dir build --output-on-failure'
step build_release 900 bash -c 'cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build build-release -j'

# ---- ordering while another process's kernels are switched in between blocks ----
if python3 -c 'import cuda.core' 2>/dev/null; then
  python3 - >"$out/load.log" 2>&1 <<'EOF' &
from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
import numpy as np, time
dev = Device(); dev.set_current(); s = dev.create_stream()
code = 'extern "C" __global__ void spin(long long c) { long long t = clock64(); while (clock64() - t < c) {} }'
k = Program(code, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin").get_kernel("spin")
end = time.time() + 120
while time.time() < end:  # grids of ~1 ms blocks, back to back, for two minutes
    launch(s, LaunchConfig(grid=4 * dev.properties.multiprocessor_count, block=32), k, np.int64(2_000_000))
    s.sync()
print("load done")
EOF
  load=$!
  sleep 5
  step order_under_load 600 build/tests/test_order
  step record_under_load 600 build/tests/test_record
  kill "$load" 2>/dev/null
  wait "$load" 2>/dev/null
else
  skip order_under_load "no cuda.core for the other process's load"
fi

# ---- unmodified driver-API clients, through NVIDIA's library and nvhcq's ----
for client in cuda_core_check cuda_python_check numba_check; do
  mod=${client%_check}
  [ "$mod" = cuda_python ] && mod=cuda.bindings
  [ "$mod" = cuda_core ] && mod=cuda.core
  if ! python3 -c "import $mod" 2>/dev/null; then
    skip "$client" "no $mod"
    continue
  fi
  step "${client}_nvidia" 600 python3 "tests/cuda/$client.py"
  step "${client}_nvhcq" 600 env LD_LIBRARY_PATH="$ours" NUMBA_CUDA_DRIVER="$ours/libcuda.so.1" \
    python3 "tests/cuda/$client.py"
done

# ---- benchmarks: nvhcq and libcuda in one run each ----
cubins=build-release/tests/cubins
step bench_compute 600 build-release/nvhcq_bench_compute "$cubins/device_kernels_sm_90.cubin"
step bench_real 900 build-release/nvhcq_bench_real build-release/bench/real_kernels_sm_90.cubin
step tpc_probe 300 env NVHCQ_DEBUG_TPC_ANY=1 build-release/nvhcq_tpc_probe "$cubins/device_kernels_sm_90.cubin"
if [ -n "$bench_c" ] && [ -n "$kern_cu" ] && command -v nvcc >/dev/null; then
  nvcc -cubin -arch=sm_90 -o "$out/kern.cubin" "$kern_cu" &&
    gcc -O2 -o "$out/bench_cuda" "$bench_c" -I"${CUDA_PATH:-/usr/local/cuda}/include" -lcuda
  step bench_cuda_nvidia 600 env LD_LIBRARY_PATH="$nvidia_lib" "$out/bench_cuda" "$out/kern.cubin"
  step bench_cuda_nvhcq 600 env LD_LIBRARY_PATH="$ours" "$out/bench_cuda" "$out/kern.cubin"
else
  skip bench_cuda "no BENCH_C and KERN_CU given (or no nvcc)"
fi
echo "logs in $out"
