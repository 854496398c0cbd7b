#!/bin/bash
# Diffs what NVIDIA's libcuda.so.1 and nvhcq's answer about GPU 0 (nvhcq_cuda_facts, run once
# with each on LD_LIBRARY_PATH). usage: tests/cuda/compare_facts.sh BUILD_DIR [CUBIN]
# Exit status: 0 when the answers agree, 1 when they differ, 2 when NVIDIA's library is missing.
set -u
build=${1:?usage: compare_facts.sh BUILD_DIR [CUBIN]}
cubin=${2:-$build/tests/cubins/device_kernels_sm_90.cubin}
nvidia=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
if [ -z "$nvidia" ]; then
  echo "compare_facts: NVIDIA's libcuda.so.1 is not in the loader cache" >&2
  exit 2
fi
out=$(mktemp -d)
LD_LIBRARY_PATH=$(dirname "$nvidia") "$build/nvhcq_cuda_facts" "$cubin" >"$out/nvidia.txt"
LD_LIBRARY_PATH=$build/cuda "$build/nvhcq_cuda_facts" "$cubin" >"$out/nvhcq.txt"
echo "compare_facts: $(wc -l <"$out/nvidia.txt") answers from NVIDIA's library," \
  "$(wc -l <"$out/nvhcq.txt") from nvhcq's; < NVIDIA, > nvhcq:"
diff "$out/nvidia.txt" "$out/nvhcq.txt"
status=$?
rm -rf "$out"
exit $((status != 0))
