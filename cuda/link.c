/* JIT options (CUjit_option arrays) as nvJitLink options and the logs, sizes and wall time they
 * ask back, and the cuLink* calls on nvhcq's linker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define LINK_MAGIC 0x4b4e494cu

struct CUlinkState_st {
  uint32_t magic;
  nvhcq_linker *l;
  nvcu_jit jit;
  double ms; /* compile and link time so far: CU_JIT_WALL_TIME accumulates until destroy */
};

double nvcu_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static unsigned value_u(void *v) {
  return (unsigned)(uintptr_t)v;
}

/* An option that becomes an nvJitLink option, printf-style. */
static void add_opt(nvcu_jit *j, const char *fmt, unsigned v) {
  if (j->n >= NVCU_JIT_MAX_OPTS) return;
  snprintf(j->buf[j->n], sizeof j->buf[0], fmt, v);
  j->opts[j->n] = j->buf[j->n];
  j->n++;
}

/* CU_JIT_TARGET's value (CUjit_target: 90, 0x10000 + 90 for sm_90a, 0x20000 + 100 for sm_100f). */
static CUresult target_arch(unsigned v, char *arch, size_t size) {
  unsigned sm = v & 0xffff, kind = v >> 16;
  if (sm < 50 || sm > 200 || kind > 2) return CUDA_ERROR_INVALID_VALUE;
  snprintf(arch, size, "sm_%u%s", sm, kind == 1 ? "a" : kind == 2 ? "f" : "");
  return CUDA_SUCCESS;
}

static CUresult parse_one(nvcu_jit *j, unsigned i, CUjit_option o, void *v) {
  switch ((int)o) {
  case CU_JIT_MAX_REGISTERS:
    add_opt(j, "-maxrregcount=%u", value_u(v));
    break;
  case CU_JIT_WALL_TIME:
    j->wall_slot = (int)i;
    break;
  case CU_JIT_INFO_LOG_BUFFER:
    j->info = v;
    break;
  case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
    j->info_size = value_u(v), j->info_slot = (int)i;
    break;
  case CU_JIT_ERROR_LOG_BUFFER:
    j->error = v;
    break;
  case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
    j->error_size = value_u(v), j->error_slot = (int)i;
    break;
  case CU_JIT_OPTIMIZATION_LEVEL:
    if (value_u(v) > 4) return CUDA_ERROR_INVALID_VALUE;
    if (value_u(v) < 4) add_opt(j, "-Xptxas=-O%u", value_u(v)); /* 4: the default, ptxas's -O3 */
    break;
  case CU_JIT_TARGET_FROM_CUCONTEXT:
    j->arch[0] = '\0';
    break;
  case CU_JIT_TARGET:
    return target_arch(value_u(v), j->arch, sizeof j->arch);
  case CU_JIT_GENERATE_DEBUG_INFO:
    if (value_u(v)) add_opt(j, "-g", 0);
    break;
  case CU_JIT_LOG_VERBOSE:
    if (value_u(v)) add_opt(j, "-verbose", 0);
    break;
  case CU_JIT_GENERATE_LINE_INFO:
    if (value_u(v)) add_opt(j, "-lineinfo", 0);
    break;
  case CU_JIT_CACHE_MODE:
    if (value_u(v) > 2) return CUDA_ERROR_INVALID_VALUE;
    if (value_u(v)) add_opt(j, value_u(v) == 1 ? "-Xptxas=-dlcm=cg" : "-Xptxas=-dlcm=ca", 0);
    break;
  case CU_JIT_LTO:
    if (value_u(v)) add_opt(j, "-lto", 0);
    break;
  case CU_JIT_FTZ:
    add_opt(j, "-ftz=%u", value_u(v) != 0);
    break;
  case CU_JIT_PREC_DIV:
    add_opt(j, "-prec-div=%u", value_u(v) != 0);
    break;
  case CU_JIT_PREC_SQRT:
    add_opt(j, "-prec-sqrt=%u", value_u(v) != 0);
    break;
  case CU_JIT_FMA:
    add_opt(j, "-fma=%u", value_u(v) != 0);
    break;
  case CU_JIT_SPLIT_COMPILE:
    add_opt(j, "-split-compile=%u", value_u(v));
    break;
  case CU_JIT_GLOBAL_SYMBOL_NAMES:
  case CU_JIT_GLOBAL_SYMBOL_ADDRESSES:
  case CU_JIT_GLOBAL_SYMBOL_COUNT:
    /* Relocating device symbols to host addresses changes what the code does: not ignorable. */
    return nvcu_unsupported("CU_JIT_GLOBAL_SYMBOL_* (device symbols bound to host addresses)");
  default:
    /* Hints CUDA takes that change nothing nvJitLink can be told: THREADS_PER_BLOCK, FALLBACK,
     * FAST_COMPILE, NEW_SM3X_OPT, REFERENCED_*, OPTIMIZE_UNUSED_DEVICE_VARIABLES, PIC,
     * MIN_CTA_PER_SM, MAX_THREADS_PER_BLOCK, OVERRIDE_DIRECTIVE_VALUES. */
    if ((int)o < 0 || (int)o >= CU_JIT_NUM_OPTIONS) return CUDA_ERROR_INVALID_VALUE;
    nvcu_note("JIT option %d accepted and not passed on", (int)o);
    break;
  }
  return CUDA_SUCCESS;
}

CUresult nvcu_jit_parse(unsigned n, CUjit_option *options, void **values, nvcu_jit *j) {
  memset(j, 0, sizeof *j);
  j->wall_slot = j->info_slot = j->error_slot = -1;
  if (n && (!options || !values)) return CUDA_ERROR_INVALID_VALUE;
  j->values = values;
  for (unsigned i = 0; i < n; i++) {
    CUresult r = parse_one(j, i, options[i], values[i]);
    if (r) return r;
  }
  return CUDA_SUCCESS;
}

/* A log into a caller's buffer of `size` bytes (the terminator included); the bytes written, the
 * terminator not counted, go back into its size option's slot. */
static void fill_log(char *buf, unsigned size, int slot, void **values, const char *log) {
  if (!buf || !size) return;
  size_t n = strlen(log ? log : "");
  if (n > size - 1) n = size - 1;
  memcpy(buf, log ? log : "", n);
  buf[n] = '\0';
  if (slot >= 0) values[slot] = (void *)(uintptr_t)n;
}

void nvcu_jit_report(const nvcu_jit *j, const char *info, const char *error, double ms) {
  fill_log(j->info, j->info_size, j->info_slot, j->values, info);
  fill_log(j->error, j->error_size, j->error_slot, j->values, error);
  if (j->wall_slot >= 0) {
    float f = (float)ms; /* CUDA overwrites the option's value with a float */
    j->values[j->wall_slot] = NULL;
    memcpy(&j->values[j->wall_slot], &f, sizeof f);
  }
}

/* ---- cuLink* ---- */

static CUresult link_check(CUlinkState s) {
  return s && s->magic == LINK_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static void link_report(CUlinkState s) {
  nvcu_jit_report(&s->jit, nvhcq_linker_info_log(s->l), nvhcq_linker_error_log(s->l), s->ms);
}

CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                         CUlinkState *stateOut) {
  if (!stateOut) return CUDA_ERROR_INVALID_VALUE;
  struct CUlinkState_st *s = calloc(1, sizeof *s);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = nvcu_jit_parse(numOptions, options, optionValues, &s->jit);
  if (!r && !s->jit.arch[0]) { /* the current context's GPU */
    NVCU_LOCK();
    nvcu_device *d;
    int index;
    r = nvcu_current(&d, &index);
    if (!r) snprintf(s->jit.arch, sizeof s->jit.arch, "%s", d->info.arch);
    NVCU_UNLOCK();
  }
  double t0 = nvcu_now_ms();
  nvhcq_status st =
      r ? NVHCQ_SUCCESS : nvhcq_linker_create(s->jit.arch, s->jit.opts, s->jit.n, &s->l);
  if (!r && st == NVHCQ_ERROR_NOT_FOUND) {
    fprintf(stderr, "nvhcq-cuda: %s\n", nvhcq_last_error());
    r = CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
  } else if (!r && st) {
    r = nvcu_status(st, "cuLinkCreate");
  }
  if (r) {
    if (st) nvcu_jit_report(&s->jit, "", nvhcq_last_error(), 0);
    free(s);
    return r;
  }
  s->ms = nvcu_now_ms() - t0;
  s->magic = LINK_MAGIC;
  *stateOut = s;
  return CUDA_SUCCESS;
}

/* CUjitInputType as nvhcq's link input (NVVM is LTO-IR). */
static const nvhcq_link_input input_kinds[] = {NVHCQ_LINK_CUBIN,   NVHCQ_LINK_PTX,
                                               NVHCQ_LINK_FATBIN,  NVHCQ_LINK_OBJECT,
                                               NVHCQ_LINK_LIBRARY, NVHCQ_LINK_LTOIR};

CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                          const char *name, unsigned int numOptions, CUjit_option *options,
                          void **optionValues) {
  if (link_check(state)) return CUDA_ERROR_INVALID_HANDLE;
  if (!data || !size || (unsigned)type >= CU_JIT_NUM_INPUT_TYPES) return CUDA_ERROR_INVALID_VALUE;
  nvcu_jit per_input;
  CUresult r = nvcu_jit_parse(numOptions, options, optionValues, &per_input);
  if (r) return r;
  /* nvJitLink takes options per link, not per input: these apply only where they agree. */
  if (per_input.n) nvcu_note("cuLinkAddData: %d per-input options not applied", per_input.n);
  const uint8_t *p = data;
  uint32_t magic =
      size >= 16 ? (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) : 0;
  if (type == CU_JIT_INPUT_FATBINARY && magic == 0x466243b1u) { /* the wrapper nvcc embeds */
    memcpy(&data, p + 8, sizeof data);
    const uint8_t *c = data; /* the container: its header's size at +6, the rest's at +8 */
    uint64_t rest;
    memcpy(&rest, c + 8, sizeof rest);
    size = (size_t)(c[6] | c[7] << 8) + (size_t)rest;
  }
  double t0 = nvcu_now_ms();
  nvhcq_status st = nvhcq_linker_add(state->l, input_kinds[type], data, size, name);
  state->ms += nvcu_now_ms() - t0;
  link_report(state);
  if (!st) return CUDA_SUCCESS;
  r = nvcu_status(st, "cuLinkAddData");
  if (r == CUDA_ERROR_INVALID_PTX && type != CU_JIT_INPUT_PTX) r = CUDA_ERROR_INVALID_IMAGE;
  return r;
}

CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
                          unsigned int numOptions, CUjit_option *options, void **optionValues) {
  if (link_check(state)) return CUDA_ERROR_INVALID_HANDLE;
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  FILE *f = fopen(path, "rb");
  if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  char *data = n > 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n + 1) : NULL;
  int ok = data && fread(data, 1, (size_t)n, f) == (size_t)n;
  fclose(f);
  CUresult r = ok ? CUDA_SUCCESS : n == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_FILE_NOT_FOUND;
  if (ok) data[n] = '\0';
  const char *base = strrchr(path, '/');
  if (!r)
    r = cuLinkAddData_v2(state, type, data, (size_t)n, base ? base + 1 : path, numOptions, options,
                         optionValues);
  free(data);
  return r;
}

CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut) {
  if (link_check(state)) return CUDA_ERROR_INVALID_HANDLE;
  if (!cubinOut) return CUDA_ERROR_INVALID_VALUE;
  const void *cubin = NULL;
  size_t size = 0;
  double t0 = nvcu_now_ms();
  nvhcq_status st = nvhcq_linker_complete(state->l, &cubin, &size);
  state->ms += nvcu_now_ms() - t0;
  link_report(state);
  if (st) return nvcu_status(st, "cuLinkComplete");
  *cubinOut = (void *)(uintptr_t)cubin;
  if (sizeOut) *sizeOut = size;
  return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state) {
  if (link_check(state)) return CUDA_ERROR_INVALID_HANDLE;
  state->magic = 0;
  (void)nvhcq_linker_destroy(state->l); /* checked: state held a live one */
  free(state);
  return CUDA_SUCCESS;
}

/* The names before CUDA 6.5, with the same parameters. */
CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
                      CUlinkState *stateOut) {
  return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                       const char *name, unsigned int numOptions, CUjit_option *options,
                       void **optionValues) {
  return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
                       unsigned int numOptions, CUjit_option *options, void **optionValues) {
  return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}
