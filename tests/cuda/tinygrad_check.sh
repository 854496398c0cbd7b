#!/usr/bin/env bash
# tinygrad's own tests on its CUDA backend (ctypes on libcuda.so.1, PTX through cuModuleLoadData,
# explicit CUDA graphs), run against nvhcq's libcuda.so.1 and then against the system's library, on
# a GPU machine (not part of ctest: it needs a tinygrad checkout, its test dependencies (pytest,
# numpy, torch for test_ops; pytest-xdist optional), NVRTC and a clang for tinygrad's CPU device):
#   tests/cuda/tinygrad_check.sh TINYGRAD_DIR [BUILD_DIR]
# TINYGRAD_TESTS="..." names other test files. Prints each run's failures and pytest summary; the
# two runs should fail the same tests (those that launch a grid with a zero dimension, which both
# libraries refuse with CUDA_ERROR_INVALID_VALUE).
set -u
tg=${1:?usage: $0 TINYGRAD_DIR [BUILD_DIR]}
build=$(cd "${2:-build}" && pwd)
[ -f "$build/cuda/libcuda.so.1" ] || { echo "no $build/cuda/libcuda.so.1: build first"; exit 2; }
cd "$tg" || exit 2
export DEV=CUDA
# tinygrad's CPU device (its copies and references) runs clang; CC=gcc cannot build its kernels.
[ -n "${CC:-}" ] && "$CC" --version 2>/dev/null | grep -q clang || CC=$(command -v clang || ls /usr/lib/llvm-*/bin/clang 2>/dev/null | tail -1)
export CC
jobs=()
python3 -c "import xdist" 2>/dev/null && jobs=(-n 8)
tests=(test/test_tiny.py test/backend/test_jit.py test/backend/test_graph.py
  test/backend/test_symbolic_jit.py test/unit/test_jit.py test/backend/test_subbuffer.py
  test/backend/test_ops.py)
[ -n "${TINYGRAD_TESTS:-}" ] && read -r -a tests <<<"$TINYGRAD_TESTS"
log=$(mktemp)
status=0
for lib in nvhcq system; do
  echo "== tinygrad on the $lib libcuda.so.1"
  if [ $lib = nvhcq ]; then
    LD_LIBRARY_PATH="$build/cuda" python3 -m pytest -q -p no:cacheprovider "${jobs[@]}" "${tests[@]}" >"$log" 2>&1
  else
    python3 -m pytest -q -p no:cacheprovider "${jobs[@]}" "${tests[@]}" >"$log" 2>&1
  fi
  rc=$?
  grep '^FAILED' "$log"
  tail -n 1 "$log"
  [ $rc = 0 ] || status=1
done
rm -f "$log"
exit $status
