/* Run-time compilation (NVRTC for CUDA C, nvJitLink for PTX, both loaded with dlopen) and the
 * on-disk cache of what they produce. */
#ifndef NVHCQ_COMPILE_H
#define NVHCQ_COMPILE_H

#include <stdint.h>

#include "util/error.h"

/* Counters for tests: compiler invocations and cache hits in this process. */
typedef struct nvhcq_compile_stats {
  uint64_t compiles, cache_hits, cache_rejects;
} nvhcq_compile_stats;

void nvhcq_compile_get_stats(nvhcq_compile_stats *stats);
/* CUDA C to PTX for arch's virtual architecture (sm_90: compute_90) through NVRTC, uncached: what
 * the mock GPU runs a module compiled from CUDA C from. *ptx is malloc'd, not NUL-terminated. */
nvhcq_status nvhcq_compile_cuda_to_ptx(const void *source, size_t size, const char *arch,
                                       const char *const *options, int num_options, char **ptx,
                                       size_t *ptx_size);
/* Whether compile status `s` for `arch` (the last error saying why) is one a retry for the
 * arch-specific target would fix (sm_90a: wgmma, setmaxnreg, ...); if so, that target's name
 * goes to `specific`. */
int nvhcq_compile_arch_specific_retry(nvhcq_status s, const char *arch, char *specific,
                                      size_t size);
/* The cache directory in use ("" when the cache is off). */
const char *nvhcq_cache_dir(void);

#endif
