/* RM and UVM calls: driver statuses turned into nvhcq statuses with messages, the layouts of
 * each driver branch, and the trace of every call (NVHCQ_TRACE=1). */
#include "driver/rm.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/door.h"

static const nvhcq_branch branches[] = {
    {570, 48, 2, 460, 57, 24, 132, 56},
    {580, 56, 3, 1028, 128, 24, 132, 64},
    {590, 56, 3, 1028, 128, 16, 132, 64},
    {595, 56, 3, 1028, 128, 16, 68, 64},
};

const nvhcq_branch *nvhcq_branch_for_version(const char *version) {
  char *end;
  unsigned long major = strtoul(version, &end, 10);
  if (end == version || *end != '.') return NULL;
  for (size_t i = 0; i < sizeof branches / sizeof branches[0]; i++)
    if (branches[i].major == major) return &branches[i];
  return NULL;
}

const char *nvhcq_supported_branches(void) {
  return "570, 580, 590, 595";
}

int nvhcq_trace_level(void) {
  static int cached = -1;
  if (cached < 0) {
    const char *env = getenv("NVHCQ_TRACE");
    /* "1" (or any other word) traces driver calls; "2" and up also decodes each submission. */
    cached = !env || !*env || !strcmp(env, "0") ? 0 : atoi(env) >= 2 ? 2 : 1;
  }
  return cached;
}

int nvhcq_trace_enabled(void) {
  return nvhcq_trace_level() > 0;
}

void nvhcq_trace_format(char *buf, size_t size, const char *call, const char *what, uint32_t status,
                        double micros) {
  snprintf(buf, size, "nvhcq: %-22s %s -> %s (0x%x) %.1f us", call, what,
           nvhcq_nv_status_name(status), status, micros);
}

static void trace(const char *call, const char *what, uint32_t status, double t0) {
  char line[512];
  nvhcq_trace_format(line, sizeof line, call, what, status, (nvhcq_now_ms() - t0) * 1e3);
  fprintf(stderr, "%s\n", line);
}

nvhcq_status nvhcq_status_from_nv(uint32_t nv_status) {
  switch (nv_status) {
  case 0:
    return NVHCQ_SUCCESS;
  case 0x51: /* NV_ERR_NO_MEMORY */
  case 0x1a: /* NV_ERR_INSUFFICIENT_RESOURCES */
    return NVHCQ_ERROR_OUT_OF_MEMORY;
  case 0x0f: /* NV_ERR_GPU_IS_LOST */
    return NVHCQ_ERROR_GPU_FAULT;
  default:
    return NVHCQ_ERROR_DRIVER;
  }
}

nvhcq_status nvhcq_rm_escape(int fd, unsigned nr, void *arg, size_t size, const char *what) {
  int r = nvhcq_door->ioctl(fd, NV_IOWR(nr, size), arg);
  if (r < 0)
    return nvhcq_fail(NVHCQ_ERROR_DRIVER, "%s: ioctl 0x%x failed: %s", what, nr, strerror(-r));
  return NVHCQ_SUCCESS;
}

static nvhcq_status rm_result(const char *call, const char *what, uint32_t nv_status) {
  if (nv_status == 0) return NVHCQ_SUCCESS;
  nvhcq_status s = nvhcq_status_from_nv(nv_status);
  const char *hint = s == NVHCQ_ERROR_OUT_OF_MEMORY ? "; free memory or allocate less" : "";
  return nvhcq_fail(s, "%s %s failed: driver status %s (0x%x)%s", call, what,
                    nvhcq_nv_status_name(nv_status), nv_status, hint);
}

nvhcq_status nvhcq_rm_alloc(nvhcq_rm *rm, uint32_t parent, uint32_t hclass, void *params,
                            uint32_t params_size, uint32_t *handle) {
  NVOS21_PARAMETERS p = {.hRoot = rm->root,
                         .hObjectParent = parent,
                         .hObjectNew = *handle,
                         .hClass = hclass,
                         .pAllocParms = (uintptr_t)params,
                         .paramsSize = params_size};
  char what[128];
  snprintf(what, sizeof what, "%s (0x%x) under 0x%x", nvhcq_class_name(hclass), hclass, parent);
  double t0 = nvhcq_now_ms();
  NVHCQ_TRY(nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_ALLOC, &p, sizeof p, "RM alloc"));
  if (nvhcq_trace_enabled()) {
    char w2[160];
    snprintf(w2, sizeof w2, "%s = 0x%x", what, p.hObjectNew);
    trace("RM_ALLOC", w2, p.status, t0);
  }
  if (rm->root == 0 && hclass == NV01_ROOT_CLIENT) rm->root = p.hObjectNew;
  *handle = p.hObjectNew;
  return rm_result("allocating", what, p.status);
}

nvhcq_status nvhcq_rm_control(nvhcq_rm *rm, uint32_t object, uint32_t cmd, void *params,
                              uint32_t params_size) {
  NVOS54_PARAMETERS p = {.hClient = rm->root,
                         .hObject = object,
                         .cmd = cmd,
                         .params = (uintptr_t)params,
                         .paramsSize = params_size};
  char what[128];
  snprintf(what, sizeof what, "%s (0x%x) on 0x%x", nvhcq_control_name(cmd), cmd, object);
  double t0 = nvhcq_now_ms();
  NVHCQ_TRY(nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_CONTROL, &p, sizeof p, "RM control"));
  if (nvhcq_trace_enabled()) trace("RM_CONTROL", what, p.status, t0);
  return rm_result("control", what, p.status);
}

nvhcq_status nvhcq_rm_free(nvhcq_rm *rm, uint32_t parent, uint32_t handle) {
  NVOS00_PARAMETERS p = {.hRoot = rm->root, .hObjectParent = parent, .hObjectOld = handle};
  char what[64];
  snprintf(what, sizeof what, "0x%x under 0x%x", handle, parent);
  double t0 = nvhcq_now_ms();
  NVHCQ_TRY(nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_FREE, &p, sizeof p, "RM free"));
  if (nvhcq_trace_enabled()) trace("RM_FREE", what, p.status, t0);
  return rm_result("freeing", what, p.status);
}

nvhcq_status nvhcq_rm_share(nvhcq_rm *rm, uint32_t object) {
  NVOS57_PARAMETERS p = {.hClient = rm->root,
                         .hObject = object,
                         .policy = {.access_mask = 1u << RS_ACCESS_DUP_OBJECT,
                                    .type = RS_SHARE_TYPE_OS_SECURITY_TOKEN,
                                    .action = RS_SHARE_ACTION_FLAG_COMPOSE}};
  char what[64];
  snprintf(what, sizeof what, "0x%x with the same user's clients", object);
  double t0 = nvhcq_now_ms();
  NVHCQ_TRY(nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_SHARE, &p, sizeof p, "RM share"));
  if (nvhcq_trace_enabled()) trace("RM_SHARE", what, p.status, t0);
  return rm_result("sharing", what, p.status);
}

nvhcq_status nvhcq_rm_dup(nvhcq_rm *rm, uint32_t parent, uint32_t src_client, uint32_t src_object,
                          uint32_t *handle) {
  NVOS55_PARAMETERS p = {
      .hClient = rm->root, .hParent = parent, .hClientSrc = src_client, .hObjectSrc = src_object};
  char what[64];
  snprintf(what, sizeof what, "0x%x of client 0x%x", src_object, src_client);
  double t0 = nvhcq_now_ms();
  NVHCQ_TRY(nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_DUP_OBJECT, &p, sizeof p, "RM dup"));
  if (nvhcq_trace_enabled()) trace("RM_DUP_OBJECT", what, p.status, t0);
  NVHCQ_TRY(rm_result("duplicating", what, p.status));
  *handle = p.hObject;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_uvm_call(nvhcq_rm *rm, unsigned long cmd, const char *name, void *params,
                            size_t status_offset) {
  double t0 = nvhcq_now_ms();
  int r = nvhcq_door->ioctl(rm->fd_uvm, cmd, params);
  if (r < 0) return nvhcq_fail(NVHCQ_ERROR_DRIVER, "UVM %s: ioctl failed: %s", name, strerror(-r));
  uint32_t status;
  memcpy(&status, (char *)params + status_offset, sizeof status);
  if (nvhcq_trace_enabled()) trace(name, "", status, t0);
  return rm_result("UVM", name, status);
}

nvhcq_status nvhcq_uvm_free(nvhcq_rm *rm, uint64_t base, uint64_t length) {
  if (rm->branch->uvm_free_size == sizeof(UVM_FREE_PARAMS_590)) {
    UVM_FREE_PARAMS_590 p = {.base = base};
    return nvhcq_uvm_call(rm, UVM_FREE, "UVM_FREE", &p, offsetof(UVM_FREE_PARAMS_590, rmStatus));
  }
  UVM_FREE_PARAMS_580 p = {.base = base, .length = length};
  return nvhcq_uvm_call(rm, UVM_FREE, "UVM_FREE", &p, offsetof(UVM_FREE_PARAMS_580, rmStatus));
}

/* The 570 layout is the 580 one without flags2 and kindOverride. */
static nvhcq_status map_dma_escape(nvhcq_rm *rm, NVOS46_PARAMETERS *p) {
  if (rm->branch->map_dma_size == sizeof(NVOS46_PARAMETERS))
    return nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_MAP_MEMORY_DMA, p, sizeof *p, "RM map DMA");
  NVOS46_PARAMETERS_570 q = {.hClient = p->hClient,
                             .hDevice = p->hDevice,
                             .hDma = p->hDma,
                             .hMemory = p->hMemory,
                             .offset = p->offset,
                             .length = p->length,
                             .flags = p->flags,
                             .dmaOffset = p->dmaOffset};
  NVHCQ_TRY(nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_MAP_MEMORY_DMA, &q, sizeof q, "RM map DMA"));
  p->dmaOffset = q.dmaOffset;
  p->status = q.status;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_rm_map_dma(nvhcq_rm *rm, uint32_t device, uint32_t virt, uint32_t memory,
                              uint64_t offset, uint64_t length, uint32_t flags,
                              uint64_t *gpu_address) {
  NVOS46_PARAMETERS p = {.hClient = rm->root,
                         .hDevice = device,
                         .hDma = virt,
                         .hMemory = memory,
                         .offset = offset,
                         .length = length,
                         .flags = flags};
  char what[96];
  snprintf(what, sizeof what, "0x%x into 0x%x, %llu bytes", memory, virt,
           (unsigned long long)length);
  double t0 = nvhcq_now_ms();
  NVHCQ_TRY(map_dma_escape(rm, &p));
  if (nvhcq_trace_enabled()) trace("RM_MAP_MEMORY_DMA", what, p.status, t0);
  *gpu_address = p.dmaOffset;
  return rm_result("mapping for the GPU", what, p.status);
}

nvhcq_status nvhcq_rm_unmap_dma(nvhcq_rm *rm, uint32_t device, uint32_t virt, uint32_t memory,
                                uint64_t gpu_address) {
  NVOS47_PARAMETERS p = {.hClient = rm->root,
                         .hDevice = device,
                         .hDma = virt,
                         .hMemory = memory,
                         .dmaOffset = gpu_address};
  char what[96];
  snprintf(what, sizeof what, "0x%x from 0x%x at 0x%llx", memory, virt,
           (unsigned long long)gpu_address);
  double t0 = nvhcq_now_ms();
  NVHCQ_TRY(nvhcq_rm_escape(rm->fd_ctl, NV_ESC_RM_UNMAP_MEMORY_DMA, &p, sizeof p, "RM unmap DMA"));
  if (nvhcq_trace_enabled()) trace("RM_UNMAP_MEMORY_DMA", what, p.status, t0);
  return rm_result("unmapping for the GPU", what, p.status);
}
