#!/bin/bash
# Diffs what NVIDIA's libcuda.so.1 and nvhcq's answer about GPU 0 (nvhcq_cuda_facts, run once
# with each on LD_LIBRARY_PATH), answer by answer; the differences tests/cuda/facts_known.txt
# explains are listed apart. usage: tests/cuda/compare_facts.sh BUILD_DIR [CUBIN [KEEP_DIR]]
# Exit status: 0 when the answers agree but for the known differences, 1 when others differ, 2
# when NVIDIA's library is missing or a run fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: compare_facts.sh BUILD_DIR [CUBIN [KEEP_DIR]]}
cubin=${2:-$build/tests/cubins/device_kernels_sm_90.cubin}
nvidia=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
if [ -z "$nvidia" ]; then
  echo "compare_facts: NVIDIA's libcuda.so.1 is not in the loader cache" >&2
  exit 2
fi
facts=$build/tests/nvhcq_cuda_facts
out=${3:-$(mktemp -d)}
mkdir -p "$out"
# EAGER: NVIDIA's library otherwise loads kernels lazily and answers some attributes with
# CUDA_ERROR_FUNCTION_NOT_LOADED; nvhcq's loads every kernel at once.
CUDA_MODULE_LOADING=EAGER LD_LIBRARY_PATH=$(dirname "$nvidia") "$facts" "$cubin" \
  >"$out/nvidia.txt" || exit 2
LD_LIBRARY_PATH=$build/cuda "$facts" "$cubin" >"$out/nvhcq.txt" || exit 2
# Each answer's key is its line without the last word (the value, or an error's name).
diff "$out/nvidia.txt" "$out/nvhcq.txt" | grep '^[<>]' >"$out/diff.txt"
cut -f1 "$here/facts_known.txt" | grep -v '^#' | grep -v '^$' >"$out/known_keys.txt"
awk 'NR == FNR { known[$0] = 1; next }
     { line = substr($0, 3); key = line; sub(/ [^ ]*$/, "", key)
       if (key in known) print > "/dev/stderr"; else print }' \
  "$out/known_keys.txt" "$out/diff.txt" >"$out/unexpected.txt" 2>"$out/known.txt"
echo "compare_facts: $(wc -l <"$out/nvidia.txt") answers from NVIDIA's library," \
  "$(wc -l <"$out/nvhcq.txt") from nvhcq's; $(($(wc -l <"$out/known.txt") / 2)) known" \
  "differences (tests/cuda/facts_known.txt); the others (< NVIDIA, > nvhcq):"
cat "$out/unexpected.txt"
status=0
[ -s "$out/unexpected.txt" ] && status=1
[ -z "${3:-}" ] && rm -rf "$out"
exit $status
