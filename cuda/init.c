/* Initialisation and logging, devices and contexts (primary and created, with the
 * per-thread current-context stack). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "stubs.h"

/* Recursive: a call may use another public call (cuMemAllocHost is cuMemHostAlloc). */
pthread_mutex_t nvcu_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

static int initialized;
static int device_count;
static nvcu_device devices[NVCU_MAX_DEVICES];

/* The current-context stack of this thread. */
#define CTX_STACK 32
static __thread CUcontext ctx_stack[CTX_STACK];
static __thread int ctx_depth;

int nvcu_log_enabled(void) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *e = getenv("NVHCQ_CUDA_LOG");
    enabled = e && *e && strcmp(e, "0") != 0;
  }
  return enabled;
}

/* A failure's message goes to the log clients read with cuLogs* and, with NVHCQ_CUDA_LOG=1, to
 * stderr; a note (what was accepted, ignored or refused without failing) to stderr only. */
static void say(int record, const char *fmt, va_list ap) {
  if (!record && !nvcu_log_enabled()) return;
  char text[1024];
  vsnprintf(text, sizeof text, fmt, ap);
  if (record) nvcu_logs_add(CU_LOG_LEVEL_ERROR, text);
  if (nvcu_log_enabled()) fprintf(stderr, "nvhcq-cuda: %s\n", text);
}

void nvcu_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(1, fmt, ap);
  va_end(ap);
}

void nvcu_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(0, fmt, ap);
  va_end(ap);
}

CUresult nvcu_unsupported(const char *what) {
  nvcu_log("%s is not supported by nvhcq's libcuda: CUDA_ERROR_NOT_SUPPORTED", what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* The CUDA code libcuda gives for the same failure. */
static CUresult cuda_code(nvhcq_status s, const char *message) {
  switch (s) {
  case NVHCQ_SUCCESS:
    return CUDA_SUCCESS;
  case NVHCQ_ERROR_INVALID_ARGUMENT:
    return CUDA_ERROR_INVALID_VALUE;
  case NVHCQ_ERROR_LAUNCH_CHECK:
    return strstr(message, "register") ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
                                       : CUDA_ERROR_INVALID_VALUE;
  case NVHCQ_ERROR_NO_DRIVER:
  case NVHCQ_ERROR_NO_DEVICE:
    return CUDA_ERROR_NO_DEVICE;
  case NVHCQ_ERROR_UNSUPPORTED:
    return CUDA_ERROR_NOT_SUPPORTED;
  case NVHCQ_ERROR_OUT_OF_MEMORY:
    return CUDA_ERROR_OUT_OF_MEMORY;
  case NVHCQ_ERROR_TIMEOUT:
    return CUDA_ERROR_LAUNCH_TIMEOUT;
  case NVHCQ_ERROR_GPU_FAULT:
    /* the device syscalls' report of a failed assert (exec/syscalls.c) */
    if (strstr(message, "device-side assertion failed")) return CUDA_ERROR_ASSERT;
    if (strstr(message, "misaligned")) return CUDA_ERROR_MISALIGNED_ADDRESS;
    if (strstr(message, "illegal instruction")) return CUDA_ERROR_ILLEGAL_INSTRUCTION;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  case NVHCQ_ERROR_INVALID_IMAGE:
    return CUDA_ERROR_INVALID_IMAGE;
  case NVHCQ_ERROR_NOT_FOUND:
    return CUDA_ERROR_NOT_FOUND;
  case NVHCQ_ERROR_IO:
    return CUDA_ERROR_FILE_NOT_FOUND;
  case NVHCQ_ERROR_COMPILE:
    return CUDA_ERROR_INVALID_PTX;
  case NVHCQ_ERROR_BUSY:
    return CUDA_ERROR_NOT_READY;
  default:
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult nvcu_status(nvhcq_status s, const char *where) {
  if (s == NVHCQ_SUCCESS) return CUDA_SUCCESS;
  const char *message = nvhcq_last_error();
  CUresult r = cuda_code(s, message);
  nvcu_log("%s: %s (%s) -> CUDA code %d", where, message, nvhcq_status_name(s), (int)r);
  return r;
}

/* ---- init and devices ---- */

CUresult cuInit(unsigned int Flags) {
  if (Flags) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = CUDA_SUCCESS;
  if (!initialized) {
    int n = 0;
    nvhcq_status s = nvhcq_device_count(&n);
    if (s || n == 0) {
      /* Said even without NVHCQ_CUDA_LOG: a program that fails here prints only the code. */
      const char *why = s ? nvhcq_last_error() : "nvhcq sees no GPU (check *_VISIBLE_DEVICES)";
      nvcu_log("cuInit: no GPU: %s", why);
      if (!nvcu_log_enabled()) fprintf(stderr, "nvhcq-cuda: cuInit: no GPU: %s\n", why);
      r = CUDA_ERROR_NO_DEVICE;
    } else {
      device_count = n > NVCU_MAX_DEVICES ? NVCU_MAX_DEVICES : n;
      initialized = 1;
    }
  }
  NVCU_UNLOCK();
  return r;
}

CUresult nvcu_check_init(void) {
  return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = CUDA_VERSION_NVCU;
  return CUDA_SUCCESS;
}

/* Opens the device and its two queues and timelines on first use. */
static CUresult open_device(int index, nvcu_device *d) {
  /* On UVM from the first kernel, as CUDA contexts are: MMU faults reported within about a
   * millisecond, peer access, and no move onto UVM partway through a program's timed loops
   * (NVHCQ_UVM=background still gives a program the fast start). Registering while opening,
   * not moving: chained grids that end in atomics ran 0.60 us each on the H200 on the channels
   * made then, and 0.67-0.69 us on those a move (or a recovery) made; the cause is not known. */
  nvhcq_open_options o = {.struct_size = sizeof o, .uvm = NVHCQ_OPEN_UVM_EAGER};
  nvhcq_status s = nvhcq_device_open_with(index, &o, &d->dev);
  if (s) return nvcu_status(s, "opening the GPU");
  d->info.struct_size = sizeof d->info;
  s = nvhcq_device_query_info(d->dev, &d->info);
  for (int e = 0; e < 2 && !s; e++) {
    s = nvhcq_queue_create(d->dev, e ? NVHCQ_QUEUE_COPY : NVHCQ_QUEUE_COMPUTE, &d->queue[e]);
    if (!s) s = nvhcq_signal_create(d->dev, 0, &d->timeline[e]);
  }
  if (s) {
    CUresult r = nvcu_status(s, "setting up the GPU");
    nvhcq_device_close(d->dev);
    memset(d, 0, sizeof *d);
    return r;
  }
  d->primary = (struct CUctx_st){.magic = NVCU_CTX_MAGIC, .device = index, .primary = 1};
  return CUDA_SUCCESS;
}

CUresult nvcu_device_get(int index, nvcu_device **out) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (index < 0 || index >= device_count) return CUDA_ERROR_INVALID_DEVICE;
  nvcu_device *d = &devices[index];
  if (!d->dev && (r = open_device(index, d))) return r;
  *out = d;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= device_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = device_count;
  return CUDA_SUCCESS;
}

/* Runs the statements given with the opened device `d` of ordinal `dev`, under the lock. */
#define WITH_DEVICE(dev, ...)                                                                      \
  do {                                                                                             \
    NVCU_LOCK();                                                                                   \
    nvcu_device *d;                                                                                \
    CUresult r_ = nvcu_device_get(dev, &d);                                                        \
    if (!r_) {                                                                                     \
      __VA_ARGS__;                                                                                 \
    }                                                                                              \
    NVCU_UNLOCK();                                                                                 \
    return r_;                                                                                     \
  } while (0)

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  WITH_DEVICE(dev, snprintf(name, (size_t)len, "%s", d->info.name));
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  WITH_DEVICE(dev, memcpy(uuid->bytes, d->info.uuid, 16));
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  WITH_DEVICE(dev, *bytes = d->info.memory_bytes);
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev) {
  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
  WITH_DEVICE(dev, *major = (int)(d->info.sm_version >> 8);
              *minor = (int)((d->info.sm_version >> 4) & 0xf));
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  WITH_DEVICE(dev, snprintf(pciBusId, (size_t)len, "%04X:%02X:%02X.%X", d->info.pci_domain,
                            d->info.pci_bus, d->info.pci_device, d->info.pci_function));
}

/* ---- contexts ---- */

static CUresult ctx_check(CUcontext c) {
  return c && c->magic == NVCU_CTX_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUcontext nvcu_current_ctx(void) {
  return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult nvcu_current(nvcu_device **out, int *index) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  CUcontext c = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (index) *index = c->device;
  return out ? nvcu_device_get(c->device, out) : CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  WITH_DEVICE(dev, d->primary_refs++; *pctx = &d->primary);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  WITH_DEVICE(dev, if (d->primary_refs > 0) d->primary_refs--);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}

/* A reset context keeps no peer access, as in CUDA. */
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  WITH_DEVICE(dev, r_ = nvcu_wait_all(d); d->primary.peers = 0);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  WITH_DEVICE(dev, *flags = d->primary.flags; *active = d->primary_refs > 0);
}

/* A context's scheduling flags choose how the CPU waits for its device (nvhcq's wait modes are
 * CUDA's): SPIN, YIELD, BLOCKING_SYNC, and AUTO for none. Contexts of one device share its
 * mode: the last flags given win. NVHCQ_WAIT, when set, wins over what the program asks. */
static void apply_sched_flags(nvcu_device *d, unsigned flags) {
  const char *env = getenv("NVHCQ_WAIT");
  if (env && *env) return;
  uint32_t mode = flags & CU_CTX_SCHED_BLOCKING_SYNC ? NVHCQ_WAIT_BLOCK
                  : flags & CU_CTX_SCHED_YIELD       ? NVHCQ_WAIT_YIELD
                  : flags & CU_CTX_SCHED_SPIN        ? NVHCQ_WAIT_SPIN
                                                     : NVHCQ_WAIT_AUTO;
  (void)nvhcq_device_set_wait_mode(d->dev, mode);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  WITH_DEVICE(dev, d->primary.flags = flags; apply_sched_flags(d, flags));
}

static void ctx_push(CUcontext c) {
  if (ctx_depth < CTX_STACK) ctx_stack[ctx_depth++] = c;
}

/* A created context, made current. With execution affinity (an SM count, the one type CUDA has)
 * its grids are kept to that many SMs, rounded up as a green context's are (green.c); the count
 * given last wins. */
static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev,
                           const CUexecAffinityParam *affinity, int n) {
  if (!pctx || n < 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned want = 0;
  for (int i = 0; i < n; i++) {
    if (affinity[i].type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
      return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    if (!affinity[i].param.smCount.val) return CUDA_ERROR_INVALID_VALUE;
    want = affinity[i].param.smCount.val;
  }
  WITH_DEVICE(dev, {
    CUcontext c = calloc(1, sizeof *c);
    nvcu_sm_set sms = {0};
    unsigned count = 0;
    r_ = !c ? CUDA_ERROR_OUT_OF_MEMORY : want ? nvcu_affinity_sms(dev, want, &sms, &count) : 0;
    if (r_) {
      free(c);
    } else {
      *c = (struct CUctx_st){.magic = NVCU_CTX_MAGIC, .device = dev, .flags = flags};
      c->affinity = sms;
      c->affinity_sms = count;
      apply_sched_flags(d, flags);
      ctx_push(c);
      *pctx = c;
    }
  });
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  return ctx_create(pctx, flags, dev, NULL, 0);
}

/* cuda.h's cuCtxCreate since CUDA 13. Parameters that ask for nothing (both lists empty, as the
 * CUDA 13 samples pass them zeroed) make an ordinary context, as libcuda does. */
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  const CUctxCreateParams *p = ctxCreateParams;
  if (p && p->cigParams)
    return nvcu_unsupported("cuCtxCreate with CIG (graphics-shared) parameters");
  if (p && p->numExecAffinityParams < 0) return CUDA_ERROR_INVALID_VALUE;
  int n = p && p->execAffinityParams ? p->numExecAffinityParams : 0;
  return ctx_create(pctx, flags, dev, n ? p->execAffinityParams : NULL, n);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  if (numParams > 0 && !paramsArray) return CUDA_ERROR_INVALID_VALUE;
  return ctx_create(pctx, flags, dev, paramsArray, numParams);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (ctx_check(ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  for (int i = 0; i < ctx_depth; i++)
    if (ctx_stack[i] == ctx) {
      memmove(&ctx_stack[i], &ctx_stack[i + 1], (size_t)(ctx_depth - i - 1) * sizeof *ctx_stack);
      ctx_depth--;
      i--;
    }
  NVCU_LOCK();
  nvcu_device *d;
  if (!nvcu_device_get(ctx->device, &d)) nvcu_wait_all(d);
  NVCU_UNLOCK();
  ctx->magic = 0;
  free(ctx);
  return CUDA_SUCCESS;
}

/* CUDA 2's usage counts, still exported (and called by old ctypes scripts): an attach counts once
 * more on the current context; a detach of the current context takes one back, and destroys a
 * created context that has none left (a primary context stays). */
CUresult cuCtxAttach(CUcontext *pctx, unsigned int flags) {
  if (!pctx || flags) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_current(NULL, NULL);
  if (r) return r;
  CUcontext c = ctx_stack[ctx_depth - 1];
  c->attached++;
  *pctx = c;
  return CUDA_SUCCESS;
}

CUresult cuCtxDetach(CUcontext ctx) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (ctx_check(ctx) || !ctx_depth || ctx_stack[ctx_depth - 1] != ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx->attached > 0) {
    ctx->attached--;
    return CUDA_SUCCESS;
  }
  return ctx->primary ? CUDA_SUCCESS : cuCtxDestroy_v2(ctx);
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_check_init();
  if (r) return r;
  *pctx = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (ctx && ctx_check(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx) {
    if (ctx_depth) ctx_depth--;
    return CUDA_SUCCESS;
  }
  if (ctx_depth)
    ctx_stack[ctx_depth - 1] = ctx;
  else
    ctx_push(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (ctx_check(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx_depth >= CTX_STACK) return CUDA_ERROR_INVALID_VALUE;
  ctx_push(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (!ctx_depth) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext c = ctx_stack[--ctx_depth];
  if (pctx) *pctx = c;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  return nvcu_current(NULL, device);
}

/* With ctx NULL: the current context's device. */
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  if (!ctx) return cuCtxGetDevice(device);
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ctx_check(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_current(NULL, NULL);
  /* Mapped pinned memory is always on (since CUDA 3.2), and NVIDIA's library says so: 0x8 for a
   * primary context made with flags 0 (cuda_facts, driver 580). */
  if (!r) *flags = ctx_stack[ctx_depth - 1]->flags | CU_CTX_MAP_HOST;
  return r;
}

/* Replaces the current context's flags (scheduling, MAP_HOST, SYNC_MEMOPS, ...), which
 * cuCtxGetFlags reads back; the scheduling ones choose how waits poll, copies behave the same
 * under all of them. */
CUresult cuCtxSetFlags(unsigned int flags) {
  if (flags & ~(unsigned)CU_CTX_FLAGS_MASK) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_current(&d, NULL);
  if (!r) ctx_stack[ctx_depth - 1]->flags = flags, apply_sched_flags(d, flags);
  NVCU_UNLOCK();
  return r;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  if (ctx && ctx_check(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020; /* the context API version CUDA 4.0 and later report */
  return CUDA_SUCCESS;
}

/* Context ids: unique in the process, given on first ask (a destroyed context's is not reused). */
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId) {
  static unsigned long long last_id;
  if (!ctxId) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_check_init();
  if (r) return r;
  if (!ctx) ctx = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
  if (ctx_check(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  NVCU_LOCK();
  if (!ctx->id) ctx->id = ++last_id;
  *ctxId = ctx->id;
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_current(&d, NULL);
  if (!r) r = nvcu_wait_all(d);
  NVCU_UNLOCK();
  return r;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (!ctx) return cuCtxSynchronize();
  if (ctx_check(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_device_get(ctx->device, &d);
  if (!r) r = nvcu_wait_all(d);
  NVCU_UNLOCK();
  return r;
}

/* The printf FIFO and the malloc heap are the device's (nvhcq_device_set_limit); the other
 * limits nvhcq sizes by itself: reported as CUDA's defaults, set as accepted. */
static uint32_t nvhcq_limit(CUlimit limit) {
  return limit == CU_LIMIT_PRINTF_FIFO_SIZE   ? NVHCQ_LIMIT_PRINTF_FIFO_SIZE
         : limit == CU_LIMIT_MALLOC_HEAP_SIZE ? NVHCQ_LIMIT_MALLOC_HEAP_SIZE
                                              : 0;
}

/* Device-side cudaDeviceSynchronize went with CUDA 12's second dynamic-parallelism model, and its
 * depth limit with it: NVIDIA's library answers CUDA_ERROR_UNSUPPORTED_LIMIT (driver 580). */
static CUresult sync_depth_unsupported(const char *where) {
  nvcu_log("%s: CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: device-side synchronization does not exist since "
           "CUDA 12, nor its depth limit",
           where);
  return CUDA_ERROR_UNSUPPORTED_LIMIT;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit) {
  static const size_t defaults[] = {1024, 1u << 20, 8u << 20, 2, 2048, 64, 0};
  if (!pvalue || (unsigned)limit >= sizeof defaults / sizeof *defaults)
    return CUDA_ERROR_INVALID_VALUE;
  if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH) return sync_depth_unsupported("cuCtxGetLimit");
  if (!nvhcq_limit(limit)) {
    *pvalue = defaults[limit];
    return CUDA_SUCCESS;
  }
  NVCU_LOCK();
  nvcu_device *d;
  uint64_t v = 0;
  CUresult r = nvcu_current(&d, NULL);
  if (!r) r = nvcu_status(nvhcq_device_get_limit(d->dev, nvhcq_limit(limit), &v), "cuCtxGetLimit");
  NVCU_UNLOCK();
  if (!r) *pvalue = (size_t)v;
  return r;
}

/* CUDA's rule: the FIFO and heap sizes may change only before a kernel that uses them, else
 * CUDA_ERROR_INVALID_VALUE. */
CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH) return sync_depth_unsupported("cuCtxSetLimit");
  if (!nvhcq_limit(limit)) {
    nvcu_note("cuCtxSetLimit(%d, %zu): accepted, nvhcq sizes this by itself", (int)limit, value);
    return CUDA_SUCCESS;
  }
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_current(&d, NULL);
  nvhcq_status s = r ? NVHCQ_SUCCESS : nvhcq_device_set_limit(d->dev, nvhcq_limit(limit), value);
  if (!r && s)
    r = s == NVHCQ_ERROR_BUSY ? CUDA_ERROR_INVALID_VALUE : nvcu_status(s, "cuCtxSetLimit");
  if (s == NVHCQ_ERROR_BUSY) nvcu_log("cuCtxSetLimit: %s", nvhcq_last_error());
  NVCU_UNLOCK();
  return r;
}

CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig) {
  if (!pconfig) return CUDA_ERROR_INVALID_VALUE;
  *pconfig = CU_FUNC_CACHE_PREFER_NONE;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  (void)config; /* a hint; nvhcq picks the carveout per launch */
  return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = -5;
  return CUDA_SUCCESS;
}

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
  if (ppExportTable) *ppExportTable = NULL;
  const unsigned char *u = pExportTableId ? (const unsigned char *)pExportTableId->bytes : NULL;
  nvcu_note("cuGetExportTable(%02x%02x%02x%02x...): refused, nvhcq has no private tables",
            u ? u[0] : 0, u ? u[1] : 0, u ? u[2] : 0, u ? u[3] : 0);
  return CUDA_ERROR_NOT_SUPPORTED;
}

int nvcu_stub(const char *name) {
  return (int)nvcu_unsupported(name);
}

/* The first versions' names (CUDA 2.x and 3.x, what cuGetProcAddress gives below versions 3020 and
 * 4000, and what a client calling the unsuffixed names through dlsym or ctypes finds): their
 * parameters are the current ones'. */
NVCU_ALIAS(cuCtxCreate, cuCtxCreate_v2)
NVCU_ALIAS(cuCtxDestroy, cuCtxDestroy_v2)
NVCU_ALIAS(cuCtxPushCurrent, cuCtxPushCurrent_v2)
NVCU_ALIAS(cuCtxPopCurrent, cuCtxPopCurrent_v2)
NVCU_ALIAS(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2)
NVCU_ALIAS(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2)
