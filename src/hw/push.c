/* Pushbuffers: the growable array of method headers and data, the encoders of the host, copy and
 * compute commands nvhcq sends, and a printer that names their methods. */
#include "hw/push.h"
#include "hw/qmd.h"

#include <stdlib.h>
#include <string.h>

void nvhcq_push_init(nvhcq_push *p) {
  memset(p, 0, sizeof *p);
}

void nvhcq_push_finish(nvhcq_push *p) {
  free(p->words);
  memset(p, 0, sizeof *p);
}

void nvhcq_push_reset(nvhcq_push *p) {
  p->len = 0;
  p->error = NVHCQ_SUCCESS;
}

uint32_t *nvhcq_push_space(nvhcq_push *p, uint32_t n) {
  if (p->error) return NULL;
  if (p->len + n > p->capacity) {
    uint32_t cap = p->capacity ? p->capacity : 256;
    while (cap < p->len + n) cap *= 2;
    uint32_t *grown = realloc(p->words, cap * sizeof *grown);
    if (!grown) {
      p->error = nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "command buffer: out of host memory");
      return NULL;
    }
    p->words = grown;
    p->capacity = cap;
  }
  uint32_t *at = p->words + p->len;
  p->len += n;
  return at;
}

void nvhcq_push_method(nvhcq_push *p, unsigned subc, unsigned method, const uint32_t *data,
                       unsigned n) {
  uint32_t *w = nvhcq_push_space(p, n + 1);
  if (!w) return;
  w[0] = nvhcq_method_header(NVHCQ_SEC_OP_INC_METHOD, subc, method, n);
  memcpy(w + 1, data, n * sizeof *data);
}

/* ---- encoders ---- */

static void push_host_semaphore(nvhcq_push *p, uint64_t address, uint64_t value, uint32_t execute) {
  uint32_t w[5] = {(uint32_t)address, (uint32_t)(address >> 32), (uint32_t)value,
                   (uint32_t)(value >> 32), execute};
  nvhcq_push_method(p, NVHCQ_SUBC_HOST, NVC56F_SEM_ADDR_LO, w, 5);
}

void nvhcq_push_host_wait(nvhcq_push *p, uint64_t address, uint64_t value) {
  push_host_semaphore(p, address, value,
                      NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ |
                          NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT);
}

void nvhcq_push_host_acquire(nvhcq_push *p, uint64_t address, uint64_t value, uint32_t operation,
                             int payload64) {
  push_host_semaphore(p, address, value,
                      operation | (payload64 ? NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT : 0));
}

/* RELEASE_WFI: the host waits for the engine to go idle, so earlier work has completed. */
void nvhcq_push_host_write(nvhcq_push *p, uint64_t address, uint64_t value, int payload64) {
  push_host_semaphore(p, address, value,
                      NVC56F_SEM_EXECUTE_OPERATION_RELEASE | NVC56F_SEM_EXECUTE_RELEASE_WFI |
                          (payload64 ? NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT : 0));
}

void nvhcq_push_host_signal(nvhcq_push *p, uint64_t address, uint64_t value) {
  push_host_semaphore(p, address, value,
                      NVC56F_SEM_EXECUTE_OPERATION_RELEASE | NVC56F_SEM_EXECUTE_RELEASE_WFI |
                          NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT |
                          NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP);
}

/* One LINE_LENGTH_IN is 32 bits: larger copies go in 2 GiB pieces. */
void nvhcq_push_copy(nvhcq_push *p, uint64_t dst, uint64_t src, uint64_t size) {
  const uint64_t step = 1ull << 31;
  for (uint64_t done = 0; done < size; done += step) {
    uint64_t s = src + done, d = dst + done, n = size - done < step ? size - done : step;
    uint32_t offsets[4] = {(uint32_t)(s >> 32), (uint32_t)s, (uint32_t)(d >> 32), (uint32_t)d};
    nvhcq_push_method(p, NVHCQ_SUBC_COPY, NVC6B5_OFFSET_IN_UPPER, offsets, 4);
    nvhcq_push_method1(p, NVHCQ_SUBC_COPY, NVC6B5_LINE_LENGTH_IN, (uint32_t)n);
    nvhcq_push_method1(p, NVHCQ_SUBC_COPY, NVC6B5_LAUNCH_DMA,
                       NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED |
                           NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH |
                           NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH);
  }
}

/* The copy engine's four-word release writes the payload and then the GPU time at +8; from
 * AMPERE_DMA_COPY_B on, the payload can be 64 bits. */
void nvhcq_push_copy_signal(nvhcq_push *p, uint64_t address, uint64_t value, int payload64) {
  uint32_t w[4] = {(uint32_t)(address >> 32), (uint32_t)address, (uint32_t)value,
                   (uint32_t)(value >> 32)};
  nvhcq_push_method(p, NVHCQ_SUBC_COPY, NVC6B5_SET_SEMAPHORE_A, w, payload64 ? 4 : 3);
  nvhcq_push_method1(p, NVHCQ_SUBC_COPY, NVC6B5_LAUNCH_DMA,
                     NVC6B5_LAUNCH_DMA_FLUSH_ENABLE |
                         NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD |
                         (payload64 ? NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE_64BIT : 0));
}

void nvhcq_push_invalidate_shader_caches(nvhcq_push *p) {
  nvhcq_push_method1(p, NVHCQ_SUBC_COMPUTE, NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI,
                     NVC6C0_INVALIDATE_INSTRUCTION | NVC6C0_INVALIDATE_DATA |
                         NVC6C0_INVALIDATE_CONSTANT);
}

/* ---- printer ---- */

typedef struct method_name {
  unsigned subc, method;
  const char *name;
} method_name;

static const method_name method_names[] = {
    {NVHCQ_SUBC_HOST, NVC56F_NON_STALL_INTERRUPT, "NON_STALL_INTERRUPT"},
    {NVHCQ_SUBC_HOST, NVC56F_SEM_ADDR_LO, "SEM_ADDR_LO"},
    {NVHCQ_SUBC_HOST, NVC56F_SEM_ADDR_HI, "SEM_ADDR_HI"},
    {NVHCQ_SUBC_HOST, NVC56F_SEM_PAYLOAD_LO, "SEM_PAYLOAD_LO"},
    {NVHCQ_SUBC_HOST, NVC56F_SEM_PAYLOAD_HI, "SEM_PAYLOAD_HI"},
    {NVHCQ_SUBC_HOST, NVC56F_SEM_EXECUTE, "SEM_EXECUTE"},
    {NVHCQ_SUBC_HOST, NVC56F_WFI, "WFI"},
    {NVHCQ_SUBC_COPY, NVC6C0_SET_OBJECT, "SET_OBJECT"},
    {NVHCQ_SUBC_COPY, NVC6B5_SET_SEMAPHORE_A, "SET_SEMAPHORE_A"},
    {NVHCQ_SUBC_COPY, NVC6B5_SET_SEMAPHORE_B, "SET_SEMAPHORE_B"},
    {NVHCQ_SUBC_COPY, NVC6B5_SET_SEMAPHORE_PAYLOAD, "SET_SEMAPHORE_PAYLOAD"},
    {NVHCQ_SUBC_COPY, NVC7B5_SET_SEMAPHORE_PAYLOAD_UPPER, "SET_SEMAPHORE_PAYLOAD_UPPER"},
    {NVHCQ_SUBC_COPY, NVC6B5_LAUNCH_DMA, "LAUNCH_DMA"},
    {NVHCQ_SUBC_COPY, NVC6B5_OFFSET_IN_UPPER, "OFFSET_IN_UPPER"},
    {NVHCQ_SUBC_COPY, NVC6B5_OFFSET_IN_LOWER, "OFFSET_IN_LOWER"},
    {NVHCQ_SUBC_COPY, NVC6B5_OFFSET_OUT_UPPER, "OFFSET_OUT_UPPER"},
    {NVHCQ_SUBC_COPY, NVC6B5_OFFSET_OUT_LOWER, "OFFSET_OUT_LOWER"},
    {NVHCQ_SUBC_COPY, NVC6B5_LINE_LENGTH_IN, "LINE_LENGTH_IN"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_OBJECT, "SET_OBJECT"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A,
     "SET_SHADER_SHARED_MEMORY_WINDOW_A"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A + 4,
     "SET_SHADER_SHARED_MEMORY_WINDOW_B"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_PCAS_A, "SEND_PCAS_A"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_SIGNALING_PCAS2_B, "SEND_SIGNALING_PCAS2_B"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A,
     "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A + 4,
     "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A + 8,
     "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_A, "SET_SHADER_LOCAL_MEMORY_A"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_A + 4, "SET_SHADER_LOCAL_MEMORY_B"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A,
     "SET_SHADER_LOCAL_MEMORY_WINDOW_A"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A + 4,
     "SET_SHADER_LOCAL_MEMORY_WINDOW_B"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI, "INVALIDATE_SHADER_CACHES_NO_WFI"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_WAIT_FOR_IDLE, "WAIT_FOR_IDLE"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_INVALIDATE_TEXTURE_HEADER_CACHE_NO_WFI,
     "INVALIDATE_TEXTURE_HEADER_CACHE_NO_WFI"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_INVALIDATE_SAMPLER_CACHE_NO_WFI, "INVALIDATE_SAMPLER_CACHE_NO_WFI"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_SAMPLER_POOL_A, "SET_TEX_SAMPLER_POOL_A"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_SAMPLER_POOL_A + 4, "SET_TEX_SAMPLER_POOL_B"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_SAMPLER_POOL_A + 8, "SET_TEX_SAMPLER_POOL_C"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_HEADER_POOL_A, "SET_TEX_HEADER_POOL_A"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_HEADER_POOL_A + 4, "SET_TEX_HEADER_POOL_B"},
    {NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_HEADER_POOL_A + 8, "SET_TEX_HEADER_POOL_C"},
    {NVHCQ_SUBC_COMPUTE, NVCBC0_SET_TEXTURE_HEADER_VERSION, "SET_TEXTURE_HEADER_VERSION"},
};

const char *nvhcq_method_name(unsigned subc, unsigned method) {
  for (size_t i = 0; i < sizeof method_names / sizeof method_names[0]; i++)
    if (method_names[i].subc == subc && method_names[i].method == method)
      return method_names[i].name;
  return NULL;
}

/* The QMD at `gpu`, then each one it chains to (dependent QMD 0), at most 4096. */
static void decode_qmds(FILE *out, uint64_t gpu, const nvhcq_push_decode_ctx *ctx) {
  nvhcq_qmd_version v = (nvhcq_qmd_version)ctx->qmd_version;
  for (int n = 0; n < 4096 && gpu; n++) {
    const uint32_t *qmd = ctx->qmd_at ? ctx->qmd_at(ctx->user, gpu) : NULL;
    if (!qmd) {
      fprintf(out, "      QMD at 0x%llx: not readable here\n", (unsigned long long)gpu);
      return;
    }
    fprintf(out, "      QMD at 0x%llx%s:\n", (unsigned long long)gpu, n ? " (chained)" : "");
    nvhcq_qmd_print(out, v, qmd, "        ");
    if (!nvhcq_qmd_get(v, qmd, NVHCQ_QMD_DEPENDENT_QMD0_ENABLE)) return;
    gpu = nvhcq_qmd_get(v, qmd, NVHCQ_QMD_DEPENDENT_QMD0_POINTER) << 8;
  }
}

static void print_method(FILE *out, unsigned subc, unsigned m, uint32_t value, int immediate,
                         const nvhcq_push_decode_ctx *ctx) {
  const char *name = nvhcq_method_name(subc, m);
  if (immediate)
    fprintf(out, "  [%u] %s (0x%03x) = 0x%x (immediate)\n", subc, name ? name : "?", m, value);
  else
    fprintf(out, "  [%u] %s (0x%03x) = 0x%08x\n", subc, name ? name : "?", m, value);
  if (ctx && ctx->qmd_version && subc == NVHCQ_SUBC_COMPUTE && m == NVC6C0_SEND_PCAS_A)
    decode_qmds(out, (uint64_t)value << 8, ctx);
}

void nvhcq_push_decode(FILE *out, const uint32_t *words, uint32_t len,
                       const nvhcq_push_decode_ctx *ctx) {
  for (uint32_t i = 0; i < len;) {
    uint32_t h = words[i++];
    unsigned op = h >> 29, count = (h >> 16) & 0x1fff, subc = (h >> 13) & 7,
             method = (h & 0xfff) << 2;
    if (op == NVHCQ_SEC_OP_IMMD_DATA_METHOD) {
      print_method(out, subc, method, count, 1, ctx);
      continue;
    }
    for (unsigned k = 0; k < count && i < len; k++, i++) {
      unsigned m = op == NVHCQ_SEC_OP_NON_INC_METHOD || (op == NVHCQ_SEC_OP_ONE_INC && k > 0)
                       ? method + (op == NVHCQ_SEC_OP_ONE_INC ? 4 : 0)
                       : method + 4 * k;
      print_method(out, subc, m, words[i], 0, ctx);
    }
  }
}

void nvhcq_push_print(FILE *out, const uint32_t *words, uint32_t len) {
  nvhcq_push_decode(out, words, len, NULL);
}
