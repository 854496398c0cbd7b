/* Typed wrappers around RM and UVM calls: one place that turns driver statuses into nvhcq
 * statuses with messages, knows per-branch layouts, and traces every call (NVHCQ_TRACE=1). */
#ifndef NVHCQ_RM_H
#define NVHCQ_RM_H

#include <stdint.h>

#include "abi/uvm.h"
#include "util/error.h"

/* What differs between the driver branches nvhcq supports. */
typedef struct nvhcq_branch {
  unsigned major;                /* 570, 580, 590, 595 */
  uint32_t vaspace_params_size;  /* NV_VASPACE_ALLOCATION_PARAMETERS */
  uint32_t schedule_params_size; /* NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS */
  uint32_t fb_info_params_size;  /* NV2080_CTRL_FB_GET_INFO_V2_PARAMS */
  uint32_t fb_info_max_entries;
  uint32_t uvm_free_size;    /* UVM_FREE_PARAMS */
  uint32_t name_string_size; /* NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS */
  uint32_t map_dma_size;     /* NVOS46_PARAMETERS */
} nvhcq_branch;

/* The branch for a driver version string such as "580.159.04", or NULL if unknown. */
const nvhcq_branch *nvhcq_branch_for_version(const char *version);
/* "570, 580, 590, 595": for messages. */
const char *nvhcq_supported_branches(void);

typedef struct nvhcq_rm {
  int fd_ctl;
  int fd_uvm;
  uint32_t root;
  const nvhcq_branch *branch;
} nvhcq_rm;

int nvhcq_trace_enabled(void);
/* 0 off, 1 driver calls (NVHCQ_TRACE=1), 2 also every submission's methods and QMDs. */
int nvhcq_trace_level(void);
/* Formats one trace line (without newline); exposed for tests. */
void nvhcq_trace_format(char *buf, size_t size, const char *call, const char *what, uint32_t status,
                        double micros);

const char *nvhcq_nv_status_name(uint32_t status);
const char *nvhcq_class_name(uint32_t hclass);
/* Robust-channel (Xid) error names, as the driver reports them in a channel's error notifier. */
const char *nvhcq_xid_name(uint32_t xid);
const char *nvhcq_control_name(uint32_t cmd);
/* The nvhcq status for an RM status (NV_ERR_NO_MEMORY -> NVHCQ_ERROR_OUT_OF_MEMORY, ...). */
nvhcq_status nvhcq_status_from_nv(uint32_t nv_status);

/* A raw escape ioctl on any fd; fails only if the ioctl itself fails. */
nvhcq_status nvhcq_rm_escape(int fd, unsigned nr, void *arg, size_t size, const char *what);

/* Allocates an object of `hclass` under `parent`. *handle: in, the handle to use (0: RM picks);
 * out, the new handle. */
nvhcq_status nvhcq_rm_alloc(nvhcq_rm *rm, uint32_t parent, uint32_t hclass, void *params,
                            uint32_t params_size, uint32_t *handle) NVHCQ_MUST_CHECK;
nvhcq_status nvhcq_rm_control(nvhcq_rm *rm, uint32_t object, uint32_t cmd, void *params,
                              uint32_t params_size) NVHCQ_MUST_CHECK;
nvhcq_status nvhcq_rm_free(nvhcq_rm *rm, uint32_t parent, uint32_t handle);
/* Lets clients of the same user (other processes too) duplicate `object`. */
nvhcq_status nvhcq_rm_share(nvhcq_rm *rm, uint32_t object) NVHCQ_MUST_CHECK;
/* Duplicates object `src_object` of client `src_client` under `parent`; *handle is the new one. */
nvhcq_status nvhcq_rm_dup(nvhcq_rm *rm, uint32_t parent, uint32_t src_client, uint32_t src_object,
                          uint32_t *handle) NVHCQ_MUST_CHECK;

/* Maps `memory` into the range of GPU addresses that virtual memory object `virt` holds (RM-managed
 * address spaces); *gpu_address is where the driver put it. */
/* `length` bytes of `memory` from `offset` on into all of `virt`. */
nvhcq_status nvhcq_rm_map_dma(nvhcq_rm *rm, uint32_t device, uint32_t virt, uint32_t memory,
                              uint64_t offset, uint64_t length, uint32_t flags,
                              uint64_t *gpu_address) NVHCQ_MUST_CHECK;
nvhcq_status nvhcq_rm_unmap_dma(nvhcq_rm *rm, uint32_t device, uint32_t virt, uint32_t memory,
                                uint64_t gpu_address);

/* A UVM ioctl whose parameter block holds its status at `status_offset`. */
nvhcq_status nvhcq_uvm_call(nvhcq_rm *rm, unsigned long cmd, const char *name, void *params,
                            size_t status_offset) NVHCQ_MUST_CHECK;
nvhcq_status nvhcq_uvm_free(nvhcq_rm *rm, uint64_t base, uint64_t length);

/* ---- opening the driver (open.c) ---- */

/* Opens /dev/nvidiactl, or says why it cannot. */
nvhcq_status nvhcq_open_ctl(int *fd) NVHCQ_MUST_CHECK;
/* Opens /dev/nvidia<minor> and registers it with the control fd; *fd is -1 on failure. */
nvhcq_status nvhcq_open_gpu(int fd_ctl, uint32_t minor, int *fd) NVHCQ_MUST_CHECK;
/* Opens UVM twice (rm->fd_uvm and *fd_uvm2, tied to it) and initializes it; the fds are -1 or
 * open on failure, for the caller to close. */
nvhcq_status nvhcq_open_uvm(nvhcq_rm *rm, int *fd_uvm2) NVHCQ_MUST_CHECK;
/* NVHCQ_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES, else NULL. */
const char *nvhcq_visible_list(void);
/* The driver's GPUs, compacted into `cards` (NV_MAX_CARDS entries), and in `visible` the indexes
 * into `cards` of the *count visible ones, in the visible-devices order. */
nvhcq_status nvhcq_list_cards(int fd_ctl, nv_ioctl_card_info_t *cards, int *visible,
                              int *count) NVHCQ_MUST_CHECK;
/* Parses a visible-devices list ("0,2", "GPU-uuid-prefix", "-1") against `count` physical GPUs
 * whose UUID strings are given (may be NULL when unknown). Writes up to `max` physical indexes to
 * `out`, returns how many are visible. Exposed for tests. */
int nvhcq_parse_visible(const char *list, int count, const char *const *uuids, int *out, int max);

#endif
