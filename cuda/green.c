/* Green contexts: SM resources (the device's, split into groups), descriptors of them, green
 * contexts over a descriptor with their contexts and streams, whose launches nvhcq keeps to the
 * resource's TPCs (nvhcq_launch_config.tpc_mask). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* What nvhcq keeps in a resource's _internal_padding: its device, its TPCs and, for the results of
 * a split, which split made it (they cannot be split again, and one descriptor takes results of
 * one split only). */
typedef struct res_internal {
  uint32_t magic;
  int32_t device;
  uint32_t tpcs[4];
  uint32_t split; /* 0: a device's or a context's resource */
} res_internal;

#define RES_MAGIC   0x52475248u /* "HRGR" */
#define DESC_MAGIC  0x43534544u
#define GREEN_MAGIC 0x4e455247u
#define MAX_GREEN   256

/* CUDA has no call that destroys a descriptor: nvhcq keeps one per distinct set of TPCs. */
struct CUdevResourceDesc_st {
  uint32_t magic;
  int device;
  uint32_t tpcs[4];
  struct CUdevResourceDesc_st *next;
};

struct CUgreenCtx_st {
  uint32_t magic;
  int device;
  unsigned long long id;
  nvcu_sm_set sms;
  struct CUctx_st ctx; /* cuCtxFromGreenCtx's: the device's primary context with these SMs */
};

/* Green contexts that exist, for the streams that name theirs by id. */
static struct CUgreenCtx_st *live[MAX_GREEN];
static struct CUdevResourceDesc_st *descs;
static unsigned long long last_green_id, last_split;

static int popcount4(const uint32_t t[4]) {
  return __builtin_popcount(t[0]) + __builtin_popcount(t[1]) + __builtin_popcount(t[2]) +
         __builtin_popcount(t[3]);
}

/* The partition rules CUDA documents for green contexts: on compute capability 9.0 and later at
 * least 8 SMs, in multiples of 8; on 8.x 4, in multiples of 2; before that 2 and 2. Splits that
 * ignore co-scheduling go down to one TPC (2 SMs). */
static void rules(const nvcu_device *d, int ignore_coscheduling, unsigned *min, unsigned *align) {
  unsigned major = d->info.sm_version >> 8;
  *min = major >= 9 ? 8 : major == 8 ? 4 : 2;
  *align = major >= 9 ? 8 : 2;
  if (ignore_coscheduling) *min = *align = d->info.sms_per_tpc;
}

static void make_resource(const nvcu_device *d, int device, const uint32_t tpcs[4], uint32_t split,
                          CUdevResource *out) {
  memset(out, 0, sizeof *out);
  out->type = CU_DEV_RESOURCE_TYPE_SM;
  res_internal in = {.magic = RES_MAGIC, .device = device, .split = split};
  memcpy(in.tpcs, tpcs, sizeof in.tpcs);
  memcpy(out->_internal_padding, &in, sizeof in);
  out->sm.smCount = (unsigned)popcount4(tpcs) * d->info.sms_per_tpc;
  rules(d, 0, &out->sm.minSmPartitionSize, &out->sm.smCoscheduledAlignment);
}

static CUresult read_resource(const CUdevResource *r, res_internal *in) {
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  memcpy(in, r->_internal_padding, sizeof *in);
  if (r->type != CU_DEV_RESOURCE_TYPE_SM || in->magic != RES_MAGIC) {
    nvcu_log("an SM resource: %p was not made by cuDeviceGetDevResource, cuCtxGetDevResource, "
             "cuGreenCtxGetDevResource or cuDevSmResourceSplitByCount",
             (const void *)r);
    return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  }
  return CUDA_SUCCESS;
}

/* The TPCs the device offers to masks (all its SMs that nvhcq can name). */
static CUresult device_resource(int device, CUdevResource *out, CUdevResourceType type) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(device, &d);
  if (r) return r;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  uint32_t tpcs[4], count = 0;
  r = nvcu_status(nvhcq_device_query_tpcs(d->dev, tpcs, &count), "cuDeviceGetDevResource");
  if (!r && !count)
    return nvcu_unsupported("green contexts on this GPU (no TPC of the launch's TPC mask is "
                            "offered: see nvhcq_device_query_tpcs)");
  /* A green context promises its grids stay on its SMs: not so where some SMs answer to no
   * bit of the mask, as every masked grid may run there too. */
  uint32_t loose[4 * 2] = {0};
  if (!r)
    r = nvcu_status(nvhcq_device_query_tpc_sms(d->dev, NVHCQ_TPC_SLOT_NONE, loose),
                    "cuDeviceGetDevResource");
  if (!r && (loose[0] | loose[1] | loose[2] | loose[3] | loose[4] | loose[5] | loose[6] | loose[7]))
    return nvcu_unsupported("green contexts on this GPU (some of its SMs answer to no bit of the "
                            "launch's TPC mask, so no grid can be kept off them)");
  if (!r) make_resource(d, device, tpcs, 0, out);
  return r;
}

CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, CUdevResourceType type) {
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r) r = device_resource(device, resource, type);
  NVCU_UNLOCK();
  return r;
}

static CUresult green_check(CUgreenCtx g) {
  return g && g->magic == GREEN_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult green_resource(CUgreenCtx g, CUdevResource *out, CUdevResourceType type) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(g->device, &d);
  if (r) return r;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  make_resource(d, g->device, g->sms.tpcs, 0, out);
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *resource,
                                  CUdevResourceType type) {
  if (green_check(hCtx)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  CUresult r = green_resource(hCtx, resource, type);
  NVCU_UNLOCK();
  return r;
}

CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource *resource, CUdevResourceType type) {
  if (!hCtx || hCtx->magic != NVCU_CTX_MAGIC) return CUDA_ERROR_INVALID_CONTEXT;
  NVCU_LOCK();
  CUresult r = hCtx->green ? green_resource(hCtx->green, resource, type)
                           : device_resource(hCtx->device, resource, type);
  NVCU_UNLOCK();
  return r;
}

/* ---- splits and descriptors ---- */

/* The group size a split makes: minCount rounded up to the architecture's minimum and alignment. */
static unsigned group_sms(const nvcu_device *d, unsigned flags, unsigned min_count) {
  unsigned min, align;
  rules(d, (flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) != 0, &min, &align);
  unsigned n = min_count > min ? min_count : min;
  return (n + align - 1) / align * align;
}

/* Takes `tpcs` TPCs from `from`, lowest slots first (a GPC's TPCs together), into `to`. */
static void take_tpcs(uint32_t from[4], uint32_t to[4], unsigned tpcs) {
  memset(to, 0, 4 * sizeof *to);
  for (unsigned s = 0; s < 128 && tpcs; s++)
    if (from[s / 32] >> (s % 32) & 1) {
      from[s / 32] &= ~(1u << (s % 32));
      to[s / 32] |= 1u << (s % 32);
      tpcs--;
    }
}

CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
                                     const CUdevResource *input, CUdevResource *remaining,
                                     unsigned int useFlags, unsigned int minCount) {
  res_internal in;
  nvcu_device *d;
  if (!nbGroups || (useFlags & ~3u) || (result && !*nbGroups)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = read_resource(input, &in);
  if (r) return r;
  if (in.split) {
    nvcu_log("cuDevSmResourceSplitByCount: the input is a split's result; make a green context "
             "of it and split that context's resource");
    return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  }
  NVCU_LOCK();
  r = nvcu_device_get(in.device, &d);
  unsigned total = r ? 0 : (unsigned)popcount4(in.tpcs) * d->info.sms_per_tpc;
  unsigned size = r ? 0 : group_sms(d, useFlags, minCount);
  if (!r && (minCount > total || size > total)) {
    nvcu_log("cuDevSmResourceSplitByCount: groups of %u SMs (minCount %u rounded up to this GPU's "
             "minimum and alignment) from %u SMs",
             size, minCount, total);
    r = CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  }
  if (!r) {
    unsigned groups = total / size;
    if (result && *nbGroups < groups) groups = *nbGroups;
    *nbGroups = groups;
    uint32_t left[4], tpcs[4], split = (uint32_t)++last_split;
    memcpy(left, in.tpcs, sizeof left);
    for (unsigned i = 0; i < groups; i++) {
      take_tpcs(left, tpcs, size / d->info.sms_per_tpc);
      if (result) make_resource(d, in.device, tpcs, split, &result[i]);
    }
    if (remaining) make_resource(d, in.device, left, split, remaining);
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources,
                                   unsigned int nbResources) {
  if (!phDesc || !resources || !nbResources) return CUDA_ERROR_INVALID_VALUE;
  res_internal first, in;
  CUresult r = read_resource(&resources[0], &first);
  struct CUdevResourceDesc_st desc = {.magic = DESC_MAGIC, .device = first.device};
  for (unsigned i = 0; i < nbResources && !r; i++) {
    r = read_resource(&resources[i], &in);
    if (!r && (in.device != first.device || (nbResources > 1 && in.split != first.split))) {
      nvcu_log("cuDevResourceGenerateDesc: resources %u and 0 come from different devices or "
               "splits",
               i);
      r = CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    for (int w = 0; w < 4 && !r; w++) desc.tpcs[w] |= in.tpcs[w];
  }
  if (!r && !popcount4(desc.tpcs)) r = CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  if (r) return r;
  NVCU_LOCK();
  struct CUdevResourceDesc_st *out = descs;
  while (out && (out->device != desc.device || memcmp(out->tpcs, desc.tpcs, sizeof desc.tpcs)))
    out = out->next;
  if (!out && (out = malloc(sizeof *out))) *out = desc, out->next = descs, descs = out;
  NVCU_UNLOCK();
  if (!out) return CUDA_ERROR_OUT_OF_MEMORY;
  *phDesc = out;
  return CUDA_SUCCESS;
}

/* ---- green contexts ---- */

static int live_slot(CUgreenCtx g) {
  for (int i = 0; i < MAX_GREEN; i++)
    if (live[i] == g) return i;
  return -1;
}

/* Hopper and later confine grids to TPCs (QMD versions 4 and 5). */
static CUresult green_make(CUgreenCtx g, nvcu_device *d, CUdevResourceDesc desc, CUdevice dev) {
  if ((d->info.sm_version >> 8) < 9)
    return nvcu_unsupported("green contexts before Hopper (nvhcq keeps grids to TPCs on sm_90 and "
                            "later)");
  int slot = live_slot(NULL);
  if (slot < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUcontext primary;
  CUresult r = cuDevicePrimaryCtxRetain(&primary, dev);
  if (r) return r;
  *g = (struct CUgreenCtx_st){.magic = GREEN_MAGIC, .device = dev, .id = ++last_green_id};
  g->sms.masked = 1;
  memcpy(g->sms.tpcs, desc->tpcs, sizeof g->sms.tpcs);
  g->ctx = *primary;
  g->ctx.primary = 1; /* not destroyed by cuCtxDestroy: it goes with the green context */
  g->ctx.green = g;
  live[slot] = g;
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                          unsigned int flags) {
  if (!phCtx || !(flags & CU_GREEN_CTX_DEFAULT_STREAM) || (flags & ~1u))
    return CUDA_ERROR_INVALID_VALUE;
  if (!desc || desc->magic != DESC_MAGIC || desc->device != dev) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_check_init();
  if (!r) r = nvcu_device_get(dev, &d);
  CUgreenCtx g = r ? NULL : calloc(1, sizeof *g);
  if (!r && !g) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) r = green_make(g, d, desc, dev);
  if (r)
    free(g);
  else
    *phCtx = g;
  NVCU_UNLOCK();
  return r;
}

/* Its streams stay usable: they name it by id and keep their own copy of its SMs. */
CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  if (green_check(hCtx)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  int slot = live_slot(hCtx);
  if (slot >= 0) live[slot] = NULL;
  int dev = hCtx->device;
  hCtx->magic = 0;
  hCtx->ctx.magic = 0;
  free(hCtx);
  NVCU_UNLOCK();
  return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx) {
  if (!pContext) return CUDA_ERROR_INVALID_VALUE;
  if (green_check(hCtx)) return CUDA_ERROR_INVALID_CONTEXT;
  *pContext = &hCtx->ctx;
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxGetId(CUgreenCtx greenCtx, unsigned long long *greenCtxId) {
  if (!greenCtxId) return CUDA_ERROR_INVALID_VALUE;
  if (green_check(greenCtx)) return CUDA_ERROR_INVALID_HANDLE;
  *greenCtxId = greenCtx->id;
  return CUDA_SUCCESS;
}

/* Every stream's work is ordered on the device: a record stands behind all of it, a wait is met
 * already (an interprocess event's other process aside). */
static CUresult green_event(CUgreenCtx hCtx, CUevent hEvent, int wait) {
  if (green_check(hCtx)) return CUDA_ERROR_INVALID_HANDLE;
  if (!hEvent || hEvent->magic != NVCU_EVENT_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_device_get(hCtx->device, &d);
  if (!r) r = wait ? nvcu_event_wait(d, hEvent, NULL) : nvcu_event_record(d, hEvent);
  NVCU_UNLOCK();
  return r;
}

CUresult cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent) {
  return green_event(hCtx, hEvent, 0);
}

CUresult cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent) {
  return green_event(hCtx, hEvent, 1);
}

CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags,
                                int priority) {
  if (green_check(greenCtx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!phStream || flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  CUcontext saved = NULL;
  CUresult r = cuCtxPushCurrent_v2(&greenCtx->ctx);
  if (!r) {
    r = cuStreamCreateWithPriority(phStream, flags, priority);
    cuCtxPopCurrent_v2(&saved);
  }
  return r;
}

struct CUgreenCtx_st *nvcu_green_of_id(unsigned long long id) {
  for (int i = 0; id && i < MAX_GREEN; i++)
    if (live[i] && live[i]->id == id) return live[i];
  return NULL;
}

CUresult cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx *phCtx) {
  if (!phCtx) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  *phCtx = r ? NULL : nvcu_green_of_id(st->green_id);
  NVCU_UNLOCK();
  return r;
}

nvcu_sm_set nvcu_current_sms(unsigned long long *green_id) {
  CUcontext c = nvcu_current_ctx();
  nvcu_sm_set none = {0};
  if (green_id) *green_id = c && c->green ? c->green->id : 0;
  if (c && c->green) return c->green->sms;
  return c ? c->affinity : none;
}

/* ---- execution affinity ---- */

/* Hopper and later, with every SM under a bit of the TPC mask: what green contexts need too. */
static int affinity_supported(int device, uint32_t tpcs[4]) {
  nvcu_device *d;
  CUdevResource all;
  if (nvcu_device_get(device, &d) || (d->info.sm_version >> 8) < 9) return 0;
  if (device_resource(device, &all, CU_DEV_RESOURCE_TYPE_SM)) return 0;
  res_internal in;
  memcpy(&in, all._internal_padding, sizeof in);
  memcpy(tpcs, in.tpcs, sizeof in.tpcs);
  return 1;
}

CUresult nvcu_affinity_sms(int device, unsigned want, nvcu_sm_set *out, unsigned *count) {
  uint32_t all[4], mine[4];
  nvcu_device *d;
  CUresult r = nvcu_device_get(device, &d);
  if (r) return r;
  if (!affinity_supported(device, all)) {
    nvcu_log("execution affinity: GPU %d cannot keep grids to some of its SMs (Hopper or later "
             "with every SM under the launch's TPC mask)",
             device);
    return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
  }
  unsigned total = (unsigned)popcount4(all) * d->info.sms_per_tpc, sms = group_sms(d, 0, want);
  if (sms > total) sms = total;
  take_tpcs(all, mine, sms / d->info.sms_per_tpc);
  out->masked = sms < total;
  memcpy(out->tpcs, mine, sizeof out->tpcs);
  *count = sms;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type, CUdevice dev) {
  if (!pi || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_INVALID_VALUE;
  uint32_t tpcs[4];
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_check_init();
  if (!r) r = nvcu_device_get(dev, &d);
  if (!r) *pi = affinity_supported(dev, tpcs);
  NVCU_UNLOCK();
  return r;
}

/* The SMs the current context's grids may use: its affinity's, its green context's, or all. */
CUresult cuCtxGetExecAffinity(CUexecAffinityParam *pExecAffinity, CUexecAffinityType type) {
  if (!pExecAffinity) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_current(&d, NULL);
  CUcontext c = nvcu_current_ctx();
  if (!r) {
    unsigned sms = c->green          ? (unsigned)popcount4(c->green->sms.tpcs) * d->info.sms_per_tpc
                   : c->affinity_sms ? c->affinity_sms
                                     : d->info.sm_count;
    pExecAffinity->type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
    pExecAffinity->param.smCount.val = sms;
  }
  NVCU_UNLOCK();
  return r;
}
