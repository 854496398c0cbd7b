/* Opening, closing and recovering a device, and what it reports: finds the GPU, opens the
 * driver's fds, allocates the GPU objects and reads the GPU's facts, then has each layer set up
 * its part of the device (the GPU context, signals, timelines, compute state); closing tears
 * them down in reverse. Nothing below calls into this file. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "core/context.h"
#include "core/device.h"
#include "core/peer.h"
#include "core/timeline.h"
#include "core/uvm.h"
#include "driver/door.h"
#include "driver/release.h"
#include "exec/module.h"
#include "exec/profile.h"
#include "exec/queue.h"
#include "exec/syscalls.h"
#include "exec/tpc.h"
#include "mock/mock.h"
#include "util/clock.h"
#include "util/abi.h"

#define HOST_HANDLE_BASE 0x1000u

nvhcq_status nvhcq_device_count(int *count) {
  if (!count) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_count: count is NULL");
  *count = 0;
  nvhcq_mock_install_from_env();
  int fd;
  NVHCQ_TRY(nvhcq_open_ctl(&fd));
  static nv_ioctl_card_info_t cards[NV_MAX_CARDS];
  int visible[NV_MAX_CARDS];
  nvhcq_status s = nvhcq_list_cards(fd, cards, visible, count);
  nvhcq_door->close(fd);
  return s;
}

/* ---- driver ---- */

static nvhcq_status detect_driver(nvhcq_device *dev) {
  NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS v;
  memset(&v, 0, sizeof v);
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->rm.root, NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2,
                             &v, sizeof v));
  snprintf(dev->info.driver_version, sizeof dev->info.driver_version, "%.31s",
           v.driverVersionBuffer);
  dev->rm.branch = nvhcq_branch_for_version(v.driverVersionBuffer);
  if (!dev->rm.branch)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "NVIDIA driver %s is from a branch nvhcq does not know; supported branches "
                      "are %s. Install one of those drivers or report the version",
                      v.driverVersionBuffer, nvhcq_supported_branches());
  char text[512];
  dev->info.open_kernel_module =
      nvhcq_door->read_text("/proc/driver/nvidia/version", text, sizeof text) > 0 &&
      strstr(text, "Open Kernel Module") != NULL;
  return NVHCQ_SUCCESS;
}

/* ---- GPU objects and facts ---- */

static int has_class(const uint32_t *list, uint32_t n, uint32_t c) {
  for (uint32_t i = 0; i < n; i++)
    if (list[i] == c) return 1;
  return 0;
}

static uint32_t pick(const uint32_t *list, uint32_t n, const uint32_t *prefs, size_t np) {
  for (size_t i = 0; i < np; i++)
    if (has_class(list, n, prefs[i])) return prefs[i];
  return 0;
}

static nvhcq_status choose_classes(nvhcq_device *dev) {
  NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS p = {0};
  NVHCQ_TRY(
      nvhcq_rm_control(&dev->rm, dev->h_device, NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &p, sizeof p));
  uint32_t *list = calloc(p.numClasses + 1, sizeof *list);
  if (!list) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  p.classList = (uintptr_t)list;
  nvhcq_status s =
      nvhcq_rm_control(&dev->rm, dev->h_device, NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &p, sizeof p);
  static const uint32_t usermode[] = {BLACKWELL_USERMODE_A, HOPPER_USERMODE_A, AMPERE_USERMODE_A,
                                      TURING_USERMODE_A};
  static const uint32_t gpfifo[] = {BLACKWELL_CHANNEL_GPFIFO_B, BLACKWELL_CHANNEL_GPFIFO_A,
                                    HOPPER_CHANNEL_GPFIFO_A, AMPERE_CHANNEL_GPFIFO_A};
  static const uint32_t compute[] = {BLACKWELL_COMPUTE_B, BLACKWELL_COMPUTE_A, HOPPER_COMPUTE_A,
                                     ADA_COMPUTE_A,       AMPERE_COMPUTE_B,    AMPERE_COMPUTE_A};
  static const uint32_t copy[] = {BLACKWELL_DMA_COPY_B, BLACKWELL_DMA_COPY_A, HOPPER_DMA_COPY_A,
                                  AMPERE_DMA_COPY_B, AMPERE_DMA_COPY_A};
#define PICK(l) pick(list, p.numClasses, l, sizeof l / sizeof l[0])
  if (!s) {
    dev->classes = (nvhcq_classes){PICK(usermode), PICK(gpfifo), PICK(compute), PICK(copy)};
  }
#undef PICK
  free(list);
  NVHCQ_TRY(s);
  if (!dev->classes.usermode || !dev->classes.gpfifo || !dev->classes.compute || !dev->classes.copy)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "GPU %d offers no class nvhcq can use for %s; nvhcq supports Ampere, Ada, "
                      "Hopper and Blackwell GPUs",
                      dev->index,
                      !dev->classes.compute ? "compute"
                      : !dev->classes.copy  ? "copies"
                                            : "command submission");
  dev->copy_payload64 = dev->classes.copy != AMPERE_DMA_COPY_A;
  dev->info.usermode_class = dev->classes.usermode;
  dev->info.gpfifo_class = dev->classes.gpfifo;
  dev->info.compute_class = dev->classes.compute;
  dev->info.copy_class = dev->classes.copy;
  return NVHCQ_SUCCESS;
}

/* The litter values are the chip's maxima; the SMs that work are in the floorswept TPC masks. */
static nvhcq_status count_sms(nvhcq_device *dev) {
  NV2080_CTRL_GR_GET_GPC_MASK_PARAMS g = {0};
  NVHCQ_TRY(
      nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_GR_GET_GPC_MASK, &g, sizeof g));
  uint32_t tpcs = 0;
  for (uint32_t gpc = 0; gpc < 32; gpc++) {
    if (!(g.gpcMask & (1u << gpc))) continue;
    NV2080_CTRL_GR_GET_TPC_MASK_PARAMS t = {.gpcId = gpc};
    NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_GR_GET_TPC_MASK, &t,
                               sizeof t));
    uint32_t n = (uint32_t)__builtin_popcount(t.tpcMask);
    tpcs += n;
    nvhcq_compute_state *cs = &dev->compute_state;
    if (n && cs->gpc_count < sizeof cs->gpc_sms)
      cs->gpc_sms[cs->gpc_count++] = (uint8_t)(n * dev->info.sms_per_tpc);
  }
  dev->info.sm_count = tpcs * dev->info.sms_per_tpc;
  dev->compute_state.tpc_slots = dev->info.gpcs * dev->info.tpcs_per_gpc;
  return NVHCQ_SUCCESS;
}

static nvhcq_status read_gr_info(nvhcq_device *dev) {
  NV2080_CTRL_GR_INFO list[] = {
      {NV2080_CTRL_GR_INFO_INDEX_SM_VERSION, 0},
      {NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM, 0},
      {NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS, 0},
      {NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC, 0},
      {NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC, 0},
  };
  NV2080_CTRL_GR_GET_INFO_PARAMS p = {.grInfoListSize = sizeof list / sizeof list[0],
                                      .grInfoList = (uintptr_t)list};
  NVHCQ_TRY(
      nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_GR_GET_INFO, &p, sizeof p));
  nvhcq_device_info *i = &dev->info;
  i->sm_version = list[0].data;
  i->warps_per_sm = list[1].data;
  i->gpcs = list[2].data;
  i->tpcs_per_gpc = list[3].data;
  i->sms_per_tpc = list[4].data;
  unsigned major = i->sm_version >> 8, minor = i->sm_version & 0xff;
  snprintf(i->arch, sizeof i->arch, "sm_%u%u", major, minor);
  return count_sms(dev);
}

/* The total is RM's heap, not the board's RAM: what allocations draw from, and what CUDA reports
 * (cuDeviceTotalMem_v2 of NVIDIA's library on an H100 80GB, driver 580: 85017493504 bytes, the
 * HEAP_SIZE index; TOTAL_RAM_SIZE said 480 MiB more, read with every FB-info index listed). */
static nvhcq_status read_fb_info(nvhcq_device *dev, uint64_t *total_kib, uint64_t *free_kib) {
  NV2080_CTRL_FB_GET_INFO_V2_PARAMS p;
  memset(&p, 0, sizeof p);
  p.fbInfoListSize = 2;
  p.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE;
  p.fbInfoList[1].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p,
                             dev->rm.branch->fb_info_params_size));
  if (total_kib) *total_kib = p.fbInfoList[0].data;
  if (free_kib) *free_kib = p.fbInfoList[1].data;
  return NVHCQ_SUCCESS;
}

/* The L2 size and memory bus width (RM's FB info: asked apart, so that a driver which does not
 * answer them leaves them 0 rather than failing the open), and the SM's shared-memory and block
 * limits (the architecture's table, hw/occupancy.c). */
static void read_memory_system(nvhcq_device *dev) {
  NV2080_CTRL_FB_GET_INFO_V2_PARAMS p;
  memset(&p, 0, sizeof p);
  p.fbInfoListSize = 2;
  p.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE;
  p.fbInfoList[1].index = NV2080_CTRL_FB_INFO_INDEX_BUS_WIDTH;
  nvhcq_error_saved saved;
  nvhcq_error_save(&saved);
  if (nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p,
                       dev->rm.branch->fb_info_params_size) == NVHCQ_SUCCESS) {
    dev->info.l2_bytes = p.fbInfoList[0].data;
    dev->info.memory_bus_width = p.fbInfoList[1].data;
  }
  nvhcq_error_restore(&saved);
  nvhcq_sm_limits l;
  nvhcq_sm_limits_for(dev->info.sm_version, dev->info.warps_per_sm, &l);
  uint32_t largest = 0;
  for (int c = 0; c < NVHCQ_MAX_CARVEOUTS && l.carveouts[c]; c++) largest = l.carveouts[c];
  dev->info.shared_per_sm = largest * 1024u;
  dev->info.shared_per_block = l.block_shared;
  dev->info.blocks_per_sm = l.blocks;
}

/* The PCI device, vendor and subsystem IDs (RM's bus info: asked apart, so that a driver which
 * does not answer keeps the card list's device and vendor IDs and a subsystem ID of 0). */
static void read_pci_ids(nvhcq_device *dev) {
  NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS p;
  memset(&p, 0, sizeof p);
  nvhcq_error_saved saved;
  nvhcq_error_save(&saved);
  if (nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_BUS_GET_PCI_INFO, &p,
                       sizeof p) != NVHCQ_SUCCESS) {
    nvhcq_error_restore(&saved);
    return;
  }
  if (p.pciDeviceId) dev->info.pci_id = p.pciDeviceId;
  dev->info.pci_subsystem_id = p.pciSubSystemId;
}

static void format_uuid(char *out, size_t n, const uint8_t *u) {
  snprintf(out, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
           u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
           u[15]);
}

static nvhcq_status read_identity(nvhcq_device *dev) {
  NV2080_CTRL_GPU_GET_GID_INFO_PARAMS gid;
  memset(&gid, 0, sizeof gid);
  gid.flags = NV2080_GPU_CMD_GPU_GET_GID_FLAGS_BINARY;
  gid.length = 16;
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_GPU_GET_GID_INFO, &gid,
                             sizeof gid));
  memcpy(dev->info.uuid, gid.data, 16);
  format_uuid(dev->info.uuid_string, sizeof dev->info.uuid_string, dev->info.uuid);
  NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS name;
  memset(&name, 0, sizeof name);
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_GPU_GET_NAME_STRING, &name,
                             dev->rm.branch->name_string_size));
  snprintf(dev->info.name, sizeof dev->info.name, "%.64s", (const char *)name.gpuNameString);
  uint64_t total_kib = 0;
  NVHCQ_TRY(read_fb_info(dev, &total_kib, NULL));
  dev->info.memory_bytes = total_kib << 10;
  NVHCQ_TRY(read_gr_info(dev));
  read_memory_system(dev);
  read_pci_ids(dev);
  return NVHCQ_SUCCESS;
}

/* Asks for full clocks while this client lives, as libcuda does for every context; without it
 * the GPU and its bus take a second or more to leave their idle clocks. NVHCQ_PERF_BOOST=0 skips
 * it. The request ends with the client. */
static void request_boost(nvhcq_device *dev) {
  const char *env = getenv("NVHCQ_PERF_BOOST");
  if (env && !strcmp(env, "0")) return;
  NV2080_CTRL_PERF_BOOST_PARAMS p = {.flags = NV2080_PERF_BOOST_FLAGS_CUDA_MAX,
                                     .duration = NV2080_PERF_BOOST_DURATION_INFINITE};
  (void)!nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_PERF_BOOST, &p, sizeof p);
}

static nvhcq_status alloc_gpu_objects(nvhcq_device *dev, const nv_ioctl_card_info_t *card) {
  NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS id = {.gpuId = card->gpu_id};
  NVHCQ_TRY(
      nvhcq_rm_control(&dev->rm, dev->rm.root, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, &id, sizeof id));
  NV0080_ALLOC_PARAMETERS dp = {.deviceId = id.deviceInstance,
                                .hClientShare = dev->rm.root,
                                .vaMode = NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES};
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, dev->rm.root, NV01_DEVICE_0, &dp, sizeof dp, &dev->h_device));
  NV2080_ALLOC_PARAMETERS sp = {0};
  NVHCQ_TRY(
      nvhcq_rm_alloc(&dev->rm, dev->h_device, NV20_SUBDEVICE_0, &sp, sizeof sp, &dev->h_subdevice));
  NVHCQ_TRY(choose_classes(dev));
  NVHCQ_TRY(
      nvhcq_rm_alloc(&dev->rm, dev->h_subdevice, dev->classes.usermode, NULL, 0, &dev->h_usermode));
  NVHCQ_TRY(read_identity(dev));
  nvhcq_compute_init(dev);
  request_boost(dev);
  /* UVM takes only an address space it owns (externally owned, faulting); without UVM it is
   * RM's, which maps memory and the channels' context buffers into it itself. */
  return nvhcq_uvm_alloc_vaspace(&dev->rm, dev->h_device, !dev->rm_only, &dev->h_vaspace);
}

/* The usermode page holds the doorbell; it is mapped write-only, as CUDA does. */
static nvhcq_status map_usermode(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_open_gpu(dev->rm.fd_ctl, dev->minor, &dev->usermode_fd));
  nv_ioctl_nvos33_parameters_with_fd p = {.params = {.hClient = dev->rm.root,
                                                     .hDevice = dev->h_device,
                                                     .hMemory = dev->h_usermode,
                                                     .length = 0x10000,
                                                     .flags = 2},
                                          .fd = dev->usermode_fd};
  NVHCQ_TRY(nvhcq_rm_escape(dev->rm.fd_ctl, NV_ESC_RM_MAP_MEMORY, &p, sizeof p, "map usermode"));
  if (p.params.status)
    return nvhcq_fail(NVHCQ_ERROR_DRIVER, "mapping the doorbell page: %s",
                      nvhcq_nv_status_name(p.params.status));
  void *at =
      nvhcq_door->mmap(NULL, 0x10000, PROT_READ | PROT_WRITE, MAP_SHARED, dev->usermode_fd, 0);
  if (at == MAP_FAILED)
    return nvhcq_fail(NVHCQ_ERROR_DRIVER, "mmap of the doorbell page: %s", strerror(errno));
  dev->usermode_map = at;
  return NVHCQ_SUCCESS;
}

/* Which of `names` environment variable `var` says: its index, -1 when it is unset or empty,
 * `count` when it is none of them (the caller refuses it, naming the choices). */
static int env_choice(const char *var, const char *const *names, int count) {
  const char *env = getenv(var);
  if (!env || !*env) return -1;
  int i = 0;
  while (i < count && strcmp(env, names[i])) i++;
  return i;
}

/* NVHCQ_UVM: "background" (the default) opens in RM's address space and registers the GPU with
 * UVM on a thread meanwhile (uvm.c); "eager" registers it while opening (UVM_REGISTER_GPU is ~95
 * ms of an open on the H200); "off" does without UVM, at the cost of slower fault reports. */
static nvhcq_status read_uvm_mode(nvhcq_device *dev, uint32_t asked) {
  static const char *const names[] = {"background", "eager", "off"};
  static const uint32_t modes[] = {NVHCQ_OPEN_UVM_BACKGROUND, NVHCQ_OPEN_UVM_EAGER,
                                   NVHCQ_OPEN_UVM_OFF};
  int i = env_choice("NVHCQ_UVM", names, 3);
  if (i == 3)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "NVHCQ_UVM=%s: say background (register with UVM behind the open, the "
                      "default), eager (while opening) or off (map memory through RM alone)",
                      getenv("NVHCQ_UVM"));
  dev->uvm_mode = i >= 0                            ? modes[i]
                  : asked == NVHCQ_OPEN_UVM_DEFAULT ? NVHCQ_OPEN_UVM_BACKGROUND
                                                    : asked;
  dev->rm_only = dev->uvm_mode != NVHCQ_OPEN_UVM_EAGER;
  return NVHCQ_SUCCESS;
}

/* NVHCQ_PREEMPTION: "block" (the default) lets the driver switch this device's grids out between
 * two blocks, "grid" only once a grid has ended (nvhcq.h, the open options, says why). */
static nvhcq_status read_preemption(nvhcq_device *dev, uint32_t asked) {
  static const char *const names[] = {"block", "grid"};
  int i = env_choice("NVHCQ_PREEMPTION", names, 2);
  if (i == 2)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "NVHCQ_PREEMPTION=%s: say block (another process's work may run between "
                      "two blocks of a grid, the default) or grid (only after a grid has ended)",
                      getenv("NVHCQ_PREEMPTION"));
  dev->preemption_asked = i >= 0 ? NVHCQ_OPEN_PREEMPT_BLOCK + (uint32_t)i
                          : asked == NVHCQ_OPEN_PREEMPT_DEFAULT ? NVHCQ_OPEN_PREEMPT_BLOCK
                                                                : asked;
  return NVHCQ_SUCCESS;
}

/* ---- open / close ---- */

/* NVHCQ_TIMEOUT_MS: the device timeout, a whole number of milliseconds from 1 to 2^32 - 1 (10 s
 * when unset). Anything else is refused: "10s" would otherwise be read as 10 ms. */
static nvhcq_status read_timeout(nvhcq_device *dev) {
  const char *env = getenv("NVHCQ_TIMEOUT_MS");
  dev->timeout_ms = 10000;
  if (!env || !*env) return NVHCQ_SUCCESS;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(env, &end, 10);
  if (errno || *end || env[0] == '-' || v == 0 || v > UINT32_MAX)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "NVHCQ_TIMEOUT_MS=%s: say how many milliseconds waits may take, a whole "
                      "number from 1 to %u (or unset it for the default of 10000)",
                      env, UINT32_MAX);
  dev->timeout_ms = (uint32_t)v;
  return NVHCQ_SUCCESS;
}

/* NVHCQ_WAIT: how waits poll (auto when unset); a misspelt mode is refused, not ignored. */
static nvhcq_status read_wait_mode(nvhcq_device *dev) {
  static const char *const names[] = {"auto", "spin", "yield", "block"};
  int i = env_choice("NVHCQ_WAIT", names, 4);
  if (i == 4)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "NVHCQ_WAIT=%s: say auto, spin, yield or block (or unset it for auto)",
                      getenv("NVHCQ_WAIT"));
  dev->wait_mode = i < 0 ? NVHCQ_WAIT_AUTO : (uint32_t)i;
  return NVHCQ_SUCCESS;
}

static nvhcq_status open_steps(nvhcq_device *dev, int index, const nvhcq_open_options *o) {
  NVHCQ_TRY(read_timeout(dev));
  NVHCQ_TRY(read_preemption(dev, o->preemption));
  NVHCQ_TRY(read_wait_mode(dev));
  NVHCQ_TRY(nvhcq_open_ctl(&dev->rm.fd_ctl));
  static nv_ioctl_card_info_t cards[NV_MAX_CARDS];
  int visible[NV_MAX_CARDS], count;
  NVHCQ_TRY(nvhcq_list_cards(dev->rm.fd_ctl, cards, visible, &count));
  if (index < 0 || index >= count)
    return nvhcq_fail(
        NVHCQ_ERROR_NO_DEVICE, "there is no GPU %d: %d GPU%s visible (indexes 0..%d)%s", index,
        count, count == 1 ? " is" : "s are", count - 1,
        nvhcq_visible_list() ? "; check NVHCQ_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES" : "");
  const nv_ioctl_card_info_t *card = &cards[visible[index]];
  dev->minor = card->minor_number;
  dev->gpu_id = card->gpu_id;
  nvhcq_release_join(dev->minor); /* an earlier close of this GPU finishes first */
  dev->info.pci_domain = card->domain;
  dev->info.pci_bus = card->bus;
  dev->info.pci_device = card->slot;
  dev->info.pci_function = card->function;
  dev->info.pci_id = (uint32_t)card->device_id << 16 | card->vendor_id;
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, 0, NV01_ROOT_CLIENT, NULL, 0, &dev->rm.root));
  NVHCQ_TRY(detect_driver(dev));
  NVHCQ_TRY(read_uvm_mode(dev, o->uvm));
  if (dev->uvm_mode == NVHCQ_OPEN_UVM_EAGER) NVHCQ_TRY(nvhcq_open_uvm(&dev->rm, &dev->fd_uvm2));
  NVHCQ_TRY(nvhcq_open_gpu(dev->rm.fd_ctl, dev->minor, &dev->fd_dev));
  NVHCQ_TRY(alloc_gpu_objects(dev, card));
  dev->uvm_not_started = dev->uvm_mode == NVHCQ_OPEN_UVM_BACKGROUND;
  NVHCQ_TRY(map_usermode(dev));
  if (dev->uvm_mode == NVHCQ_OPEN_UVM_EAGER) {
    double t0 = nvhcq_now_ms();
    NVHCQ_TRY(nvhcq_uvm_register(&dev->rm, dev->info.uuid, dev->h_vaspace, &dev->uvm_gpu_registered,
                                 &dev->uvm_vaspace_registered));
    dev->info.uvm_attach_ms = nvhcq_now_ms() - t0;
    nvhcq_fault_watch_open(dev);
  }
  NVHCQ_TRY(nvhcq_va_ranges_init());
  NVHCQ_TRY(nvhcq_signal_pool_init(dev));
  NVHCQ_TRY(nvhcq_timeline_init(dev));
  NVHCQ_TRY(nvhcq_signal_create(dev, 0, &dev->copy_stamp));
  NVHCQ_TRY(nvhcq_context_pick_copy_engine(dev));
  NVHCQ_TRY(nvhcq_context_create(dev));
  return nvhcq_context_setup(dev);
}

static nvhcq_status close_device(nvhcq_device *dev, int wait);

nvhcq_status nvhcq_device_open(int index, nvhcq_device **out) {
  return nvhcq_device_open_with(index, NULL, out);
}

nvhcq_status nvhcq_device_open_with(int index, const nvhcq_open_options *options,
                                    nvhcq_device **out) {
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_open: out is NULL");
  *out = NULL;
  nvhcq_open_options o = {.struct_size = sizeof o};
  if (options) {
    if (options->struct_size < offsetof(nvhcq_open_options, uvm) + sizeof o.uvm ||
        options->struct_size > 4096)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "nvhcq_device_open_with: options->struct_size is %u; set it to "
                        "sizeof(nvhcq_open_options)",
                        options->struct_size);
    memcpy(&o, options, options->struct_size < sizeof o ? options->struct_size : sizeof o);
    if (o.uvm > NVHCQ_OPEN_UVM_OFF)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "nvhcq_device_open_with: uvm = %u is not an NVHCQ_OPEN_UVM_* value", o.uvm);
    if (o.preemption > NVHCQ_OPEN_PREEMPT_GRID || o.reserved)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "nvhcq_device_open_with: preemption = %u is not an NVHCQ_OPEN_PREEMPT_* "
                        "value, or reserved (%u) is not 0",
                        o.preemption, o.reserved);
  }
  nvhcq_mock_install_from_env();
  nvhcq_profile_from_env();
  double t0 = nvhcq_now_ms();
  nvhcq_device *dev = calloc(1, sizeof *dev);
  if (!dev) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  dev->magic = NVHCQ_DEVICE_MAGIC;
  dev->index = index;
  dev->rm.fd_ctl = dev->rm.fd_uvm = dev->fd_uvm2 = dev->fd_dev = dev->usermode_fd = -1;
  dev->timeout_ms = 10000; /* NVHCQ_TIMEOUT_MS is read while opening */
  dev->next_host_handle = HOST_HANDLE_BASE;
  nvhcq_fault_init(dev);
  nvhcq_slab_init(dev);
  pthread_mutex_init(&dev->alloc_lock, NULL);
  pthread_mutex_init(&dev->tpc_lock, NULL);
  dev->no_slabs = getenv("NVHCQ_DEBUG_NO_SLABS") != NULL; /* each buffer its own allocation */
  dev->fault.name_pc = nvhcq_module_name_pc;
  dev->fault.explain = nvhcq_syscalls_explain;
  dev->after_wait = nvhcq_syscalls_drain;
  nvhcq_status s = open_steps(dev, index, &o);
  if (s) {
    nvhcq_fail_context(s, "opening GPU %d", index);
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", nvhcq_last_error());
    (void)!close_device(dev, 1); /* the caller gets no device: nothing is left running either */
    return nvhcq_fail(s, "%s", saved);
  }
  dev->info.open_ms = nvhcq_now_ms() - t0;
  dev->info.uvm_attached = !dev->rm_only;
  *out = dev;
  return NVHCQ_SUCCESS;
}

/* A card's UUID string, from a client of its own that holds only the device and subdevice (the
 * card list has no UUIDs; a full open would also register the GPU with UVM and make channels). */
static nvhcq_status probe_uuid(int fd_ctl, const nv_ioctl_card_info_t *card, char *out, size_t n) {
  nvhcq_rm rm = {.fd_ctl = fd_ctl, .fd_uvm = -1};
  int fd_gpu = -1;
  uint32_t h_device = 0, h_subdevice = 0;
  NVHCQ_TRY(nvhcq_rm_alloc(&rm, 0, NV01_ROOT_CLIENT, NULL, 0, &rm.root));
  nvhcq_status s = nvhcq_open_gpu(fd_ctl, card->minor_number, &fd_gpu);
  NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS id = {.gpuId = card->gpu_id};
  if (!s) s = nvhcq_rm_control(&rm, rm.root, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, &id, sizeof id);
  NV0080_ALLOC_PARAMETERS dp = {.deviceId = id.deviceInstance, .hClientShare = rm.root};
  if (!s) s = nvhcq_rm_alloc(&rm, rm.root, NV01_DEVICE_0, &dp, sizeof dp, &h_device);
  NV2080_ALLOC_PARAMETERS sp = {0};
  if (!s) s = nvhcq_rm_alloc(&rm, h_device, NV20_SUBDEVICE_0, &sp, sizeof sp, &h_subdevice);
  NV2080_CTRL_GPU_GET_GID_INFO_PARAMS gid;
  memset(&gid, 0, sizeof gid);
  gid.flags = NV2080_GPU_CMD_GPU_GET_GID_FLAGS_BINARY;
  gid.length = 16;
  if (!s)
    s = nvhcq_rm_control(&rm, h_subdevice, NV2080_CTRL_CMD_GPU_GET_GID_INFO, &gid, sizeof gid);
  if (!s) format_uuid(out, n, gid.data);
  nvhcq_rm_free(&rm, 0, rm.root); /* everything under it goes too */
  if (fd_gpu >= 0) nvhcq_door->close(fd_gpu);
  return s;
}

/* The visible GPU whose UUID `uuid` is or begins (-1: none). */
static nvhcq_status find_uuid(const char *uuid, int *found, int *count) {
  int fd;
  NVHCQ_TRY(nvhcq_open_ctl(&fd));
  static nv_ioctl_card_info_t cards[NV_MAX_CARDS];
  int visible[NV_MAX_CARDS];
  nvhcq_status s = nvhcq_list_cards(fd, cards, visible, count);
  size_t n = strlen(uuid);
  *found = -1;
  for (int i = 0; i < *count && !s; i++) {
    char text[48] = "";
    s = probe_uuid(fd, &cards[visible[i]], text, sizeof text);
    if (s || strncasecmp(text, uuid, n) != 0) continue;
    if (*found >= 0)
      s = nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                     "nvhcq_device_open_uuid: \"%s\" names GPUs %d and %d; give more of the UUID",
                     uuid, *found, i);
    *found = i;
  }
  nvhcq_door->close(fd);
  return s;
}

nvhcq_status nvhcq_device_open_uuid(const char *uuid, nvhcq_device **out) {
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_open_uuid: out is NULL");
  *out = NULL;
  if (!uuid || strncasecmp(uuid, "GPU-", 4) != 0)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_device_open_uuid: \"%s\" is not a GPU UUID; give it as nvidia-smi -L "
                      "writes it (GPU-xxxxxxxx-xxxx-...) or a prefix of that",
                      uuid ? uuid : "(null)");
  nvhcq_mock_install_from_env();
  int count = 0, found = -1;
  NVHCQ_TRY(find_uuid(uuid, &found, &count));
  if (found < 0)
    return nvhcq_fail(NVHCQ_ERROR_NO_DEVICE,
                      "no visible GPU has UUID %s (%d GPU%s visible); list them with nvidia-smi -L "
                      "and check NVHCQ_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES",
                      uuid, count, count == 1 ? " is" : "s are");
  return nvhcq_device_open(found, out);
}

/* The doorbell mapping goes now; UVM's unregistrations, the client (freeing the root client frees
 * every object under it), the driver's fds and the ranges UVM held go on a background thread,
 * unless the caller waits. */
static void close_driver(nvhcq_device *dev, int wait) {
  if (dev->usermode_map) nvhcq_door->munmap(dev->usermode_map, 0x10000);
  nvhcq_release r = {.rm = dev->rm,
                     .fds = {dev->usermode_fd, dev->fd_dev, dev->fd_uvm2, -1},
                     .uvm_gpu = dev->uvm_gpu_registered,
                     .uvm_vaspace = dev->uvm_vaspace_registered,
                     .minor = dev->minor,
                     .low_ranges = dev->stuck_va,
                     .low_range_count = dev->stuck_va_count,
                     .low_range_bytes = NVHCQ_CHANNEL_VA_BYTES};
  memcpy(r.uuid, dev->info.uuid, 16);
  nvhcq_uvm_attach_hand_over(dev, &r); /* a registration still running ends there */
  nvhcq_release_start(&r, wait || nvhcq_release_wait_by_default());
}

static nvhcq_status close_device(nvhcq_device *dev, int wait) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  /* A broken device's channels will never drain: tear down without waiting. */
  nvhcq_status s = dev->compute.handle && dev->copy.handle && !dev->broken
                       ? nvhcq_device_cpu_wait_idle(dev)
                       : NVHCQ_SUCCESS;
  char saved[2048];
  snprintf(saved, sizeof saved, "%s", nvhcq_last_error());
  nvhcq_peer_device_closing(dev);    /* its mappings of other devices' memory, theirs of its */
  nvhcq_profile_device_closing(dev); /* reads the times of what ran, writes NVHCQ_PROFILE's trace */
  if (dev->builtin) nvhcq_module_unload(dev->builtin);
  nvhcq_syscalls_close(dev); /* prints what is left, unless the device broke */
  /* A hung channel is stopped now: freeing it later would wait seconds for a preemption. */
  if (dev->broken) nvhcq_context_stop_compute(dev);
  /* From here on the driver's objects are left to the release. */
  __atomic_store_n(&dev->closing, 1, __ATOMIC_RELAXED);
  nvhcq_uvm_attach_stop(dev);
  nvhcq_uvm_drop_retired(dev, dev->broken); /* channels a move onto UVM left behind */
  nvhcq_context_destroy(dev);
  nvhcq_reclaim_all(dev); /* no channel is left to touch what was destroyed */
  nvhcq_slab_fini(dev);   /* its slabs, and its blocks never destroyed */
  while (dev->buffers) nvhcq_memory_free(dev->buffers); /* the other buffers never destroyed */
  nvhcq_arena_fini(dev); /* module images, of modules unloaded or not */
  nvhcq_timeline_fini(dev);
  if (dev->copy_stamp) nvhcq_signal_destroy(dev->copy_stamp);
  if (dev->sync_queue) nvhcq_queue_destroy(dev->sync_queue);
  for (int i = 0; i < 2; i++)
    if (dev->sync_signal[i]) nvhcq_signal_destroy(dev->sync_signal[i]);
  nvhcq_texture_pool_fini(dev);
  nvhcq_compute_fini(dev);
  nvhcq_memory_drop(&dev->staging);
  nvhcq_memory_drop(&dev->staging_small);
  nvhcq_signal_pool_fini(dev);
  nvhcq_context_free_rings(dev);
  nvhcq_fault_fini(dev);
  close_driver(dev, wait);
  pthread_mutex_destroy(&dev->alloc_lock);
  pthread_mutex_destroy(&dev->tpc_lock);
  nvhcq_retire(dev);
  if (s) return nvhcq_fail(s, "%s", saved);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_close(nvhcq_device *dev) {
  return dev ? close_device(dev, 0) : NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_close_wait(nvhcq_device *dev) {
  if (!dev) {
    nvhcq_release_join_all();
    return NVHCQ_SUCCESS;
  }
  NVHCQ_TRY(nvhcq_device_check(dev));
  uint32_t minor = dev->minor;
  nvhcq_status s = close_device(dev, 1);
  nvhcq_release_join(minor);
  return s;
}

/* A fault or a stop kills the channel group, not the address space: new channels in the same
 * space see all memory as it was. Work that had not completed is discarded; the internal
 * timelines are advanced past it so nothing waits for it. */
nvhcq_status nvhcq_device_recover(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  nvhcq_context_stop_compute(dev);
  nvhcq_uvm_drop_retired(dev, 1);
  nvhcq_context_destroy(dev);
  nvhcq_reclaim_all(dev); /* the old channels, the only users of what was destroyed, are gone */
  nvhcq_fault_reset(dev);
  nvhcq_syscalls_reset(dev); /* records the stopped kernels left unfinished are skipped */
  nvhcq_compute_reset_grid_workspace(dev); /* a stopped cooperative grid's partial count */
  nvhcq_timeline_skip(dev);
  dev->generation++;
  dev->broken = 1; /* until the new channels answer */
  nvhcq_status s = nvhcq_context_create(dev);
  if (!s) s = nvhcq_context_setup(dev);
  if (s) return nvhcq_fail_context(s, "recovering GPU %d", dev->index);
  dev->broken = 0;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_attach_uvm(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  return nvhcq_uvm_attach_now(dev);
}

nvhcq_status nvhcq_device_query_info(const nvhcq_device *dev, nvhcq_device_info *info) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  return nvhcq_fill_sized(info, &dev->info, sizeof dev->info, offsetof(nvhcq_device_info, l2_bytes),
                          "nvhcq_device_query_info");
}

nvhcq_status nvhcq_device_query_tpcs(nvhcq_device *dev, uint32_t slots[4], uint32_t *count) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!slots)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_query_tpcs: slots is NULL");
  NVHCQ_TRY(nvhcq_tpc_map(dev));
  memcpy(slots, dev->compute_state.usable_tpcs, sizeof dev->compute_state.usable_tpcs);
  if (count) *count = dev->compute_state.usable_tpc_count;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_query_tpc_sms(nvhcq_device *dev, uint32_t slot, uint32_t sms[8]) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!sms)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_query_tpc_sms: sms is NULL");
  if (slot > NVHCQ_TPC_SLOT_NONE)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_device_query_tpc_sms: slot %u is past the mask's 128 (give 0-127, or "
                      "NVHCQ_TPC_SLOT_NONE for the SMs no slot confines)",
                      slot);
  NVHCQ_TRY(nvhcq_tpc_map(dev));
  const nvhcq_compute_state *cs = &dev->compute_state;
  memset(sms, 0, 8 * sizeof *sms);
  uint8_t want = slot == NVHCQ_TPC_SLOT_NONE ? NVHCQ_TPC_NO_SLOT : (uint8_t)slot;
  for (uint32_t sm = 0; sm < 256; sm++)
    if (cs->slot_of_sm[sm] == want) sms[sm / 32] |= 1u << (sm % 32);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_set_timeout(nvhcq_device *dev, uint32_t timeout_ms) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (timeout_ms == 0) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "timeout must be > 0 ms");
  dev->timeout_ms = dev->compute.timeout_ms = dev->copy.timeout_ms = timeout_ms;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_set_wait_mode(nvhcq_device *dev, uint32_t mode) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (mode > NVHCQ_WAIT_BLOCK)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "wait mode %u: use NVHCQ_WAIT_AUTO, _SPIN, _YIELD or _BLOCK (0-3)", mode);
  __atomic_store_n(&dev->wait_mode, mode, __ATOMIC_RELAXED);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_get_free_memory(nvhcq_device *dev, uint64_t *free_bytes) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!free_bytes) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "free_bytes is NULL");
  /* Memory that closes of this GPU still hold, destroyed buffers the GPU is about to be done with
   * and the module arena's empty chunks count as free: the figure is what a destroy (or unload)
   * followed by this call expects. */
  nvhcq_release_join(dev->minor);
  if (!dev->broken) (void)nvhcq_reclaim_wait_all(dev);
  (void)!nvhcq_uvm_settle(dev); /* channels a move onto UVM left behind count as free */
  nvhcq_slab_trim(dev);
  nvhcq_arena_trim(dev);
  uint64_t kib = 0;
  NVHCQ_TRY(read_fb_info(dev, NULL, &kib));
  *free_bytes = kib << 10;
  return NVHCQ_SUCCESS;
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_device_free_memory, nvhcq_device_get_free_memory);
