#include "core/device.h"
#include "util/clock.h"
#include "util/handle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "driver/door.h"
#include "exec/queue.h"

#define GPFIFO_ENTRIES   0x4000u
#define GPFIFO_AREA      (2u << 20)
#define CMD_RING_BYTES   (2u << 20)
#define NOTIFIER_BYTES   (64u << 10)
#define CHANNEL_VA_BYTES 0x4000000ull
#define HOST_HANDLE_BASE 0x1000u
/* Shader windows for shared and local memory, on 4 GiB boundaries above every allocation. */
#define SHARED_WINDOW 0x729400000000ull
#define LOCAL_WINDOW  0x729300000000ull

nvhcq_status nvhcq_device_check(const nvhcq_device *dev) {
  return nvhcq_handle_check(dev, NVHCQ_DEVICE_MAGIC, "device", "was closed already");
}

nvhcq_channel *nvhcq_device_channel(nvhcq_device *dev, int copy) {
  return copy ? &dev->copy : &dev->compute;
}

/* ---- visible devices ---- */

int nvhcq_parse_visible(const char *list, int count, const char *const *uuids, int *out, int max) {
  int n = 0;
  const char *p = list;
  while (*p && n < max) {
    while (*p == ' ') p++;
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    int index = -1;
    if (len >= 4 && strncmp(p, "GPU-", 4) == 0) {
      for (int i = 0; uuids && i < count; i++)
        if (uuids[i] && strncmp(uuids[i], p, len) == 0) index = i;
    } else {
      char *num_end;
      long v = strtol(p, &num_end, 10);
      if (num_end != p && (size_t)(num_end - p) == len && v >= 0 && v < count) index = (int)v;
    }
    if (index < 0) break; /* as CUDA does: the list ends at the first invalid entry */
    for (int i = 0; i < n; i++)
      if (out[i] == index) return n; /* a repeated device also ends the list */
    out[n++] = index;
    if (!end) break;
    p = end + 1;
  }
  return n;
}

static const char *visible_list(void) {
  const char *v = getenv("NVHCQ_VISIBLE_DEVICES");
  return v ? v : getenv("CUDA_VISIBLE_DEVICES");
}

nvhcq_status nvhcq_open_ctl(int *fd) {
  *fd = nvhcq_door->open("/dev/nvidiactl", O_RDWR);
  if (*fd < 0)
    return nvhcq_fail(NVHCQ_ERROR_NO_DRIVER,
                      "cannot open /dev/nvidiactl: %s; is the NVIDIA kernel driver loaded "
                      "(lsmod | grep nvidia) and are you allowed to use it?",
                      strerror(errno));
  return NVHCQ_SUCCESS;
}

/* Physical GPUs (card info order), filtered by the visible-devices variables. */
static nvhcq_status list_cards(int fd_ctl, nv_ioctl_card_info_t *cards, int *visible, int *count) {
  memset(cards, 0, sizeof(nv_ioctl_card_info_t) * NV_MAX_CARDS);
  NVHCQ_TRY(nvhcq_rm_escape(fd_ctl, NV_ESC_CARD_INFO, cards,
                            sizeof(nv_ioctl_card_info_t) * NV_MAX_CARDS, "card info"));
  int physical = 0;
  for (int i = 0; i < NV_MAX_CARDS; i++)
    if (cards[i].valid) cards[physical++] = cards[i];
  const char *list = visible_list();
  if (!list) {
    for (int i = 0; i < physical; i++) visible[i] = i;
    *count = physical;
  } else {
    *count = nvhcq_parse_visible(list, physical, NULL, visible, NV_MAX_CARDS);
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_count(int *count) {
  if (!count) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_count: count is NULL");
  *count = 0;
  int fd;
  NVHCQ_TRY(nvhcq_open_ctl(&fd));
  static nv_ioctl_card_info_t cards[NV_MAX_CARDS];
  int visible[NV_MAX_CARDS];
  nvhcq_status s = list_cards(fd, cards, visible, count);
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

static nvhcq_status open_uvm(nvhcq_device *dev) {
  dev->rm.fd_uvm = nvhcq_door->open("/dev/nvidia-uvm", O_RDWR);
  dev->fd_uvm2 = nvhcq_door->open("/dev/nvidia-uvm", O_RDWR);
  if (dev->rm.fd_uvm < 0 || dev->fd_uvm2 < 0)
    return nvhcq_fail(NVHCQ_ERROR_NO_DRIVER,
                      "cannot open /dev/nvidia-uvm: %s; load the nvidia-uvm module "
                      "(modprobe nvidia-uvm) or run nvidia-modprobe -u",
                      strerror(errno));
  UVM_INITIALIZE_PARAMS init = {0};
  NVHCQ_TRY(nvhcq_uvm_call(&dev->rm, UVM_INITIALIZE, "UVM_INITIALIZE", &init,
                           offsetof(UVM_INITIALIZE_PARAMS, rmStatus)));
  /* Ties the second fd to the first's address space; CUDA gets an error here too, harmlessly. */
  UVM_MM_INITIALIZE_PARAMS mm = {.uvmFd = dev->rm.fd_uvm};
  nvhcq_door->ioctl(dev->fd_uvm2, UVM_MM_INITIALIZE, &mm);
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
    tpcs += (uint32_t)__builtin_popcount(t.tpcMask);
  }
  dev->info.sm_count = tpcs * dev->info.sms_per_tpc;
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

static nvhcq_status read_fb_info(nvhcq_device *dev, uint64_t *total_kib, uint64_t *free_kib) {
  NV2080_CTRL_FB_GET_INFO_V2_PARAMS p;
  memset(&p, 0, sizeof p);
  p.fbInfoListSize = 2;
  p.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE;
  p.fbInfoList[1].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p,
                             dev->rm.branch->fb_info_params_size));
  if (total_kib) *total_kib = p.fbInfoList[0].data;
  if (free_kib) *free_kib = p.fbInfoList[1].data;
  return NVHCQ_SUCCESS;
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
  return read_gr_info(dev);
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
  NV_VASPACE_ALLOCATION_PARAMETERS vp = {
      .flags = NV_VASPACE_FLAGS_NVHCQ, .vaBase = 0x1000, .vaSize = 0x1fffffb000000ull};
  return nvhcq_rm_alloc(&dev->rm, dev->h_device, FERMI_VASPACE_A, &vp,
                        dev->rm.branch->vaspace_params_size, &dev->h_vaspace);
}

nvhcq_status nvhcq_device_open_fd(nvhcq_device *dev, int *fd) {
  char path[32];
  snprintf(path, sizeof path, "/dev/nvidia%u", dev->minor);
  *fd = nvhcq_door->open(path, O_RDWR);
  if (*fd < 0)
    return nvhcq_fail(NVHCQ_ERROR_NO_DRIVER, "cannot open %s: %s", path, strerror(errno));
  nv_ioctl_register_fd_t reg = {.ctl_fd = dev->rm.fd_ctl};
  nvhcq_status s = nvhcq_rm_escape(*fd, NV_ESC_REGISTER_FD, &reg, sizeof reg, "register fd");
  if (s) {
    nvhcq_door->close(*fd);
    *fd = -1;
  }
  return s;
}

/* The usermode page holds the doorbell; it is mapped write-only, as CUDA does. */
static nvhcq_status map_usermode(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_device_open_fd(dev, &dev->usermode_fd));
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

static nvhcq_status register_uvm(nvhcq_device *dev) {
  UVM_REGISTER_GPU_PARAMS g = {.rmCtrlFd = -1};
  memcpy(g.gpu_uuid.uuid, dev->info.uuid, 16);
  NVHCQ_TRY(nvhcq_uvm_call(&dev->rm, UVM_REGISTER_GPU, "UVM_REGISTER_GPU", &g,
                           offsetof(UVM_REGISTER_GPU_PARAMS, rmStatus)));
  dev->uvm_gpu_registered = 1;
  UVM_REGISTER_GPU_VASPACE_PARAMS v = {
      .rmCtrlFd = dev->rm.fd_ctl, .hClient = dev->rm.root, .hVaSpace = dev->h_vaspace};
  memcpy(v.gpuUuid.uuid, dev->info.uuid, 16);
  NVHCQ_TRY(nvhcq_uvm_call(&dev->rm, UVM_REGISTER_GPU_VASPACE, "UVM_REGISTER_GPU_VASPACE", &v,
                           offsetof(UVM_REGISTER_GPU_VASPACE_PARAMS, rmStatus)));
  dev->uvm_vaspace_registered = 1;
  return NVHCQ_SUCCESS;
}

/* ---- channels ---- */

/* Gives UVM a range of our address space for the channel's context buffers. */
static nvhcq_status register_channel(nvhcq_device *dev, nvhcq_channel *ch) {
  for (;;) {
    /* Aligned to its size: the driver places context buffers of large alignment in it. */
    NVHCQ_TRY(nvhcq_va_alloc(nvhcq_va_low(), CHANNEL_VA_BYTES, CHANNEL_VA_BYTES, &ch->channel_va));
    /* UVM wants this range free of CPU mappings, like the rest of the GPU-only space. */
    munmap((void *)(uintptr_t)ch->channel_va, CHANNEL_VA_BYTES);
    UVM_REGISTER_CHANNEL_PARAMS rc = {.rmCtrlFd = dev->rm.fd_ctl,
                                      .hClient = dev->rm.root,
                                      .hChannel = ch->handle,
                                      .base = ch->channel_va,
                                      .length = CHANNEL_VA_BYTES};
    memcpy(rc.gpuUuid.uuid, dev->info.uuid, 16);
    nvhcq_status s = nvhcq_uvm_call(&dev->rm, UVM_REGISTER_CHANNEL, "UVM_REGISTER_CHANNEL", &rc,
                                    offsetof(UVM_REGISTER_CHANNEL_PARAMS, rmStatus));
    if (!s) return NVHCQ_SUCCESS;
    /* After a recovery UVM may still hold part of a range that an earlier channel used: keep
     * that range out of use until close and try another. */
    uint64_t *grown = rc.rmStatus == NV_ERR_INVALID_ADDRESS
                          ? realloc(dev->stuck_va, (dev->stuck_va_count + 1) * sizeof *grown)
                          : NULL;
    nvhcq_low_unmap(ch->channel_va, CHANNEL_VA_BYTES);
    if (!grown) {
      uint64_t at = ch->channel_va;
      (void)!nvhcq_va_free(nvhcq_va_low(), at, CHANNEL_VA_BYTES);
      ch->channel_va = 0;
      return nvhcq_fail_context(s, "registering the %s channel's range 0x%llx with UVM", ch->name,
                                (unsigned long long)at);
    }
    dev->stuck_va = grown;
    dev->stuck_va[dev->stuck_va_count++] = ch->channel_va;
    ch->channel_va = 0;
  }
}

/* A channel of the graphics channel group, in the address space of its context share, or the
 * copy channel in a group of its own on an asynchronous copy engine. */
static nvhcq_status create_channel(nvhcq_device *dev, nvhcq_channel *ch, int copy) {
  uint64_t ring_offset = copy ? GPFIFO_AREA / 2 : 0;
  if (!dev->notifiers[copy])
    NVHCQ_TRY(nvhcq_memory_alloc(dev, NOTIFIER_BYTES, NVHCQ_MEMORY_HOST_UNCACHED, NULL,
                                 &dev->notifiers[copy]));
  memset(dev->notifiers[copy]->host_pointer, 0, NOTIFIER_BYTES);
  NV_CHANNEL_ALLOC_PARAMS p;
  memset(&p, 0, sizeof p);
  p.hObjectError = dev->notifiers[copy]->handle;
  p.hObjectBuffer = dev->gpfifo_area->handle;
  p.gpFifoOffset = dev->gpfifo_area->gpu_address + ring_offset;
  p.gpFifoEntries = GPFIFO_ENTRIES;
  /* On an asynchronous copy engine the driver gives the channel a synchronous context share of
   * the group's address space; the copy object names the engine. */
  int async = copy && dev->copy_engine_type;
  p.hContextShare = async ? 0 : dev->h_ctxshare;
  p.engineType = async ? dev->copy_engine_type : 0;
  p.hUserdMemory[0] = dev->gpfifo_area->handle;
  p.userdOffset[0] = ring_offset + GPFIFO_ENTRIES * 8ull;
  ch->group = async ? dev->h_copy_group : dev->h_group;
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, ch->group, dev->classes.gpfifo, &p, sizeof p, &ch->handle));
  NVB0B5_ALLOCATION_PARAMETERS ce = {NVB0B5_ALLOCATION_PARAMETERS_VERSION_1, dev->copy_engine_type};
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, ch->handle, copy ? dev->classes.copy : dev->classes.compute,
                           async ? &ce : NULL, async ? sizeof ce : 0, &ch->engine));
  NVC36F_CTRL_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS tok = {.workSubmitToken = ~0u};
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, ch->handle, NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
                             &tok, sizeof tok));
  ch->name = copy ? "copy" : "compute";
  NVHCQ_TRY(register_channel(dev, ch));
  if (async) {
    NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS sched = {.bEnable = 1};
    NVHCQ_TRY(nvhcq_rm_control(&dev->rm, ch->handle, NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, &sched,
                               dev->rm.branch->schedule_params_size));
  }
  char *area = dev->gpfifo_area->host_pointer;
  ch->token = tok.workSubmitToken;
  ch->ring = (uint64_t *)(area + ring_offset);
  ch->gp_get = (volatile uint32_t *)(area + p.userdOffset[0] + NVHCQ_USERD_GP_GET);
  ch->gp_put = (volatile uint32_t *)(area + p.userdOffset[0] + NVHCQ_USERD_GP_PUT);
  ch->doorbell =
      (volatile uint32_t *)((char *)dev->usermode_map + NVHCQ_USERMODE_NOTIFY_CHANNEL_PENDING);
  ch->entries = GPFIFO_ENTRIES;
  ch->cmd_words = CMD_RING_BYTES / 4;
  ch->cmd = (uint32_t *)((char *)dev->cmd_area->host_pointer + (copy ? CMD_RING_BYTES : 0));
  ch->cmd_gpu = dev->cmd_area->gpu_address + (copy ? CMD_RING_BYTES : 0);
  ch->timeout_ms = dev->timeout_ms;
  ch->entry_start = calloc(GPFIFO_ENTRIES, sizeof *ch->entry_start);
  if (!ch->entry_start) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  return NVHCQ_SUCCESS;
}

static void unregister_channel(nvhcq_device *dev, nvhcq_channel *ch);
static void destroy_channel(nvhcq_device *dev, nvhcq_channel *ch);

/* Copies run in the graphics channel group unless NVHCQ_COPY_ENGINE names an asynchronous copy
 * engine, or says "auto": the one with the most physical engines behind it. On the H200 that is
 * LCE 4 (12 of them); pinned copies there were no faster than in the group. */
static nvhcq_status pick_copy_engine(nvhcq_device *dev) {
  dev->info.copy_engine = -1;
  const char *env = getenv("NVHCQ_COPY_ENGINE");
  if (!env || !strcmp(env, "gr")) return NVHCQ_SUCCESS;
  int best = -1, best_pces = 0;
  if (strcmp(env, "auto")) {
    char *end;
    long asked = strtol(env, &end, 10);
    if (end == env || *end || asked < 0 || asked >= (long)NV2080_CTRL_MAX_CES)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "NVHCQ_COPY_ENGINE=%s: say gr, auto or a copy engine number (0-%d)", env,
                        (int)NV2080_CTRL_MAX_CES - 1);
    best = (int)asked;
  }
  NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS caps;
  memset(&caps, 0, sizeof caps);
  if (best < 0 && !nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_CE_GET_ALL_CAPS,
                                    &caps, sizeof caps))
    for (uint32_t n = 0; n < NV2080_CTRL_MAX_CES; n++) {
      if (!(caps.present >> n & 1) || caps.capsTbl[n][0] & NV2080_CTRL_CE_CAPS_CE_GRCE) continue;
      NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS m = {.ceEngineType = NV2080_ENGINE_TYPE_COPY(n)};
      if (nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK, &m,
                           sizeof m))
        continue;
      int pces = __builtin_popcount(m.pceMask);
      if (pces > best_pces) best = (int)n, best_pces = pces;
    }
  if (best < 0) return NVHCQ_SUCCESS;
  dev->info.copy_engine = best;
  dev->copy_engine_type = NV2080_ENGINE_TYPE_COPY((uint32_t)best);
  return NVHCQ_SUCCESS;
}

static nvhcq_status create_async_copy(nvhcq_device *dev) {
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS cg = {.hVASpace = dev->h_vaspace,
                                               .engineType = dev->copy_engine_type};
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, dev->h_device, KEPLER_CHANNEL_GROUP_A, &cg, sizeof cg,
                           &dev->h_copy_group));
  return create_channel(dev, &dev->copy, 1);
}

/* The group, its context share and both channels. The rings' memory is kept across recoveries;
 * a new channel starts from an empty ring. */
static nvhcq_status create_channels(nvhcq_device *dev) {
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS gp = {.engineType = NV2080_ENGINE_TYPE_GRAPHICS};
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, dev->h_device, KEPLER_CHANNEL_GROUP_A, &gp, sizeof gp,
                           &dev->h_group));
  nvhcq_alloc_options ring_opts = {.contiguous = 1, .map_flags = NVHCQ_MAP_WRITE_COMBINED};
  if (!dev->gpfifo_area)
    NVHCQ_TRY(nvhcq_memory_alloc(dev, GPFIFO_AREA, NVHCQ_MEMORY_DEVICE_MAPPED, &ring_opts,
                                 &dev->gpfifo_area));
  memset(dev->gpfifo_area->host_pointer, 0, GPFIFO_AREA);
  nvhcq_alloc_options wc = {.map_flags = NVHCQ_MAP_WRITE_COMBINED};
  if (!dev->cmd_area)
    NVHCQ_TRY(nvhcq_memory_alloc(dev, 2 * CMD_RING_BYTES, NVHCQ_MEMORY_DEVICE_MAPPED, &wc,
                                 &dev->cmd_area));
  NV_CTXSHARE_ALLOCATION_PARAMETERS cp = {.hVASpace = dev->h_vaspace,
                                          .flags = NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC};
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, dev->h_group, FERMI_CONTEXT_SHARE_A, &cp, sizeof cp,
                           &dev->h_ctxshare));
  NVHCQ_TRY(create_channel(dev, &dev->compute, 0));
  if (dev->copy_engine_type && create_async_copy(dev)) {
    /* The engine would not take a channel: copies stay in the graphics group. */
    unregister_channel(dev, &dev->copy);
    destroy_channel(dev, &dev->copy);
    if (dev->h_copy_group) nvhcq_rm_free(&dev->rm, dev->h_device, dev->h_copy_group);
    dev->h_copy_group = dev->copy_engine_type = 0;
    dev->info.copy_engine = -1;
  }
  if (!dev->copy.handle) NVHCQ_TRY(create_channel(dev, &dev->copy, 1));
  NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS sched = {.bEnable = 1};
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->h_group, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &sched,
                             dev->rm.branch->schedule_params_size));
  nvhcq_fault_attach(dev);
  return NVHCQ_SUCCESS;
}

static nvhcq_status create_signals(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_memory_alloc(dev, NVHCQ_SIGNAL_SLOTS * NVHCQ_SIGNAL_SLOT_BYTES,
                               NVHCQ_MEMORY_HOST_UNCACHED, NULL, &dev->signal_page));
  dev->free_slots = malloc(NVHCQ_SIGNAL_SLOTS * sizeof *dev->free_slots);
  if (!dev->free_slots) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (uint32_t i = 0; i < NVHCQ_SIGNAL_SLOTS; i++) dev->free_slots[i] = NVHCQ_SIGNAL_SLOTS - 1 - i;
  dev->free_slot_count = NVHCQ_SIGNAL_SLOTS;
  NVHCQ_TRY(nvhcq_signal_create(dev, 0, &dev->timeline[0]));
  NVHCQ_TRY(nvhcq_signal_create(dev, 0, &dev->timeline[1]));
  return nvhcq_signal_create(dev, 0, &dev->copy_stamp);
}

/* Binds the engine objects to their subchannels and sets the shader windows, then waits for
 * both channels: the device is ready when this returns. */
static nvhcq_status setup_channels(nvhcq_device *dev) {
  nvhcq_push *p = &dev->scratch;
  nvhcq_push_reset(p);
  nvhcq_push_method1(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_OBJECT, dev->classes.compute);
  uint32_t shared[2] = {(uint32_t)(SHARED_WINDOW >> 32), (uint32_t)SHARED_WINDOW};
  uint32_t local[2] = {(uint32_t)(LOCAL_WINDOW >> 32), (uint32_t)LOCAL_WINDOW};
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A, shared, 2);
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A, local, 2);
  nvhcq_push_local_memory(dev, p);
  uint64_t v0, v1;
  NVHCQ_TRY(nvhcq_device_submit_scratch(dev, 0, &v0));
  nvhcq_push_reset(p);
  nvhcq_push_method1(p, NVHCQ_SUBC_COPY, NVC6C0_SET_OBJECT, dev->classes.copy);
  NVHCQ_TRY(nvhcq_device_submit_scratch(dev, 1, &v1));
  NVHCQ_TRY(nvhcq_device_wait_timeline(dev, 0, v0));
  return nvhcq_device_wait_timeline(dev, 1, v1);
}

const char *nvhcq_device_progress(const nvhcq_device *dev) {
  static _Thread_local char text[256];
  snprintf(
      text, sizeof text,
      "; last kernel submitted: %s; internal progress: compute %llu of %llu, copy %llu of %llu",
      dev->last_kernel[0] ? dev->last_kernel : "none", (unsigned long long)dev->timeline[0]->cpu[0],
      (unsigned long long)dev->timeline_value[0], (unsigned long long)dev->timeline[1]->cpu[0],
      (unsigned long long)dev->timeline_value[1]);
  return text;
}

uint64_t nvhcq_device_push_timeline(nvhcq_device *dev, int copy, nvhcq_push *p) {
  uint64_t v = ++dev->timeline_value[copy];
  /* On the copy channel the copy engine's own release is ordered after its copies. */
  if (copy)
    nvhcq_push_copy_signal(p, dev->timeline[copy]->gpu_address, v, dev->copy_payload64);
  else
    nvhcq_push_host_signal(p, dev->timeline[copy]->gpu_address, v);
  return v;
}

nvhcq_status nvhcq_device_submit_scratch(nvhcq_device *dev, int copy, uint64_t *value) {
  nvhcq_push *p = &dev->scratch;
  *value = nvhcq_device_push_timeline(dev, copy, p);
  NVHCQ_TRY(p->error);
  return nvhcq_channel_submit(nvhcq_device_channel(dev, copy), p->words, p->len);
}

nvhcq_status nvhcq_device_wait_timeline(nvhcq_device *dev, int copy, uint64_t value) {
  return nvhcq_device_wait_timeline_for(dev, copy, value, 0);
}

nvhcq_status nvhcq_device_wait_timeline_for(nvhcq_device *dev, int copy, uint64_t value,
                                            uint64_t expect_ns) {
  if (nvhcq_signal_value(dev->timeline[copy]) >= value) return NVHCQ_SUCCESS;
  char what[64];
  snprintf(what, sizeof what, "GPU %d %s channel", dev->index, copy ? "copy" : "compute");
  nvhcq_status s =
      nvhcq_wait_value(dev, dev->timeline[copy]->cpu, value, dev->timeout_ms, expect_ns, what);
  if (s == NVHCQ_ERROR_TIMEOUT) dev->broken = 1; /* the device's own work is stuck */
  return s;
}

/* ---- open / close ---- */

static uint32_t default_timeout(void) {
  const char *env = getenv("NVHCQ_TIMEOUT_MS");
  long v = env ? strtol(env, NULL, 10) : 0;
  return v > 0 ? (uint32_t)v : 10000;
}

static nvhcq_status open_steps(nvhcq_device *dev, int index) {
  NVHCQ_TRY(nvhcq_open_ctl(&dev->rm.fd_ctl));
  static nv_ioctl_card_info_t cards[NV_MAX_CARDS];
  int visible[NV_MAX_CARDS], count;
  NVHCQ_TRY(list_cards(dev->rm.fd_ctl, cards, visible, &count));
  if (index < 0 || index >= count)
    return nvhcq_fail(NVHCQ_ERROR_NO_DEVICE,
                      "there is no GPU %d: %d GPU%s visible (indexes 0..%d)%s", index, count,
                      count == 1 ? " is" : "s are", count - 1,
                      visible_list() ? "; check NVHCQ_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES" : "");
  const nv_ioctl_card_info_t *card = &cards[visible[index]];
  dev->minor = card->minor_number;
  dev->info.pci_domain = card->domain;
  dev->info.pci_bus = card->bus;
  dev->info.pci_device = card->slot;
  dev->info.pci_function = card->function;
  NVHCQ_TRY(nvhcq_rm_alloc(&dev->rm, 0, NV01_ROOT_CLIENT, NULL, 0, &dev->rm.root));
  NVHCQ_TRY(detect_driver(dev));
  NVHCQ_TRY(open_uvm(dev));
  NVHCQ_TRY(nvhcq_device_open_fd(dev, &dev->fd_dev));
  NVHCQ_TRY(alloc_gpu_objects(dev, card));
  NVHCQ_TRY(map_usermode(dev));
  NVHCQ_TRY(register_uvm(dev));
  nvhcq_fault_watch_open(dev);
  NVHCQ_TRY(nvhcq_va_ranges_init());
  NVHCQ_TRY(create_signals(dev));
  NVHCQ_TRY(pick_copy_engine(dev));
  NVHCQ_TRY(create_channels(dev));
  return setup_channels(dev);
}

nvhcq_status nvhcq_device_open(int index, nvhcq_device **out) {
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_open: out is NULL");
  *out = NULL;
  double t0 = nvhcq_now_ms();
  nvhcq_device *dev = calloc(1, sizeof *dev);
  if (!dev) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  dev->magic = NVHCQ_DEVICE_MAGIC;
  dev->index = index;
  pthread_mutex_init(&dev->fault_lock, NULL);
  dev->rm.fd_ctl = dev->rm.fd_uvm = dev->fd_uvm2 = dev->fd_dev = dev->usermode_fd = -1;
  dev->tools_fd = -1;
  dev->timeout_ms = default_timeout();
  dev->next_host_handle = HOST_HANDLE_BASE;
  nvhcq_push_init(&dev->scratch);
  nvhcq_status s = open_steps(dev, index);
  if (s) {
    nvhcq_fail_context(s, "opening GPU %d", index);
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", nvhcq_last_error());
    nvhcq_device_close(dev);
    return nvhcq_fail(s, "%s", saved);
  }
  dev->info.open_ms = nvhcq_now_ms() - t0;
  *out = dev;
  return NVHCQ_SUCCESS;
}

static void free_buffer(nvhcq_buffer **b) {
  if (*b) nvhcq_memory_free(*b);
  *b = NULL;
}

static void unregister_channel(nvhcq_device *dev, nvhcq_channel *ch) {
  if (!ch->channel_va) return;
  UVM_UNREGISTER_CHANNEL_PARAMS u = {
      .rmCtrlFd = dev->rm.fd_ctl, .hClient = dev->rm.root, .hChannel = ch->handle};
  memcpy(u.gpuUuid.uuid, dev->info.uuid, 16);
  (void)!nvhcq_uvm_call(&dev->rm, UVM_UNREGISTER_CHANNEL, "UVM_UNREGISTER_CHANNEL", &u,
                        offsetof(UVM_UNREGISTER_CHANNEL_PARAMS, rmStatus));
}

/* UVM lets go of every channel of a group before the driver frees any of them: the group's
 * shared buffers stay mapped while one registration holds them. */
static void destroy_channel(nvhcq_device *dev, nvhcq_channel *ch) {
  if (ch->handle) nvhcq_rm_free(&dev->rm, ch->group, ch->handle);
  if (ch->channel_va) {
    nvhcq_low_unmap(ch->channel_va, CHANNEL_VA_BYTES);
    nvhcq_va_free(nvhcq_va_low(), ch->channel_va, CHANNEL_VA_BYTES);
  }
  free(ch->entry_start);
  memset(ch, 0, sizeof *ch);
}

/* Freeing a channel whose kernel never ends waits seconds for a preemption that cannot happen;
 * stopping it the way a fault does takes milliseconds. */
static void stop_compute(nvhcq_device *dev) {
  if (nvhcq_fault_channel_stopped(dev, 0) || !dev->compute.handle) return;
  NV906F_CTRL_CMD_RESET_CHANNEL_PARAMS r = {.engineID = NV2080_ENGINE_TYPE_GRAPHICS};
  (void)!nvhcq_rm_control(&dev->rm, dev->compute.handle, NV906F_CTRL_CMD_RESET_CHANNEL, &r,
                          sizeof r);
}

static void destroy_channels(nvhcq_device *dev) {
  nvhcq_fault_detach(dev);
  unregister_channel(dev, &dev->compute);
  unregister_channel(dev, &dev->copy);
  destroy_channel(dev, &dev->compute);
  destroy_channel(dev, &dev->copy);
  if (dev->h_copy_group) nvhcq_rm_free(&dev->rm, dev->h_device, dev->h_copy_group);
  if (dev->h_group) nvhcq_rm_free(&dev->rm, dev->h_device, dev->h_group);
  dev->h_group = dev->h_ctxshare = dev->h_copy_group = 0;
}

static void close_fd(int *fd) {
  if (*fd >= 0) nvhcq_door->close(*fd);
  *fd = -1;
}

nvhcq_status nvhcq_device_close(nvhcq_device *dev) {
  if (!dev) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_device_check(dev));
  /* A broken device's channels will never drain: tear down without waiting. */
  nvhcq_status s = dev->compute.handle && dev->copy.handle && !dev->broken
                       ? nvhcq_device_synchronize(dev)
                       : NVHCQ_SUCCESS;
  char saved[2048];
  snprintf(saved, sizeof saved, "%s", nvhcq_last_error());
  if (dev->builtin) nvhcq_module_unload(dev->builtin);
  if (dev->broken) stop_compute(dev);
  destroy_channels(dev);
  for (int i = 0; i < 2; i++) {
    if (dev->timeline[i]) nvhcq_signal_destroy(dev->timeline[i]);
    free_buffer(&dev->notifiers[i]);
  }
  if (dev->copy_stamp) nvhcq_signal_destroy(dev->copy_stamp);
  if (dev->sync_queue) nvhcq_queue_destroy(dev->sync_queue);
  for (int i = 0; i < 2; i++)
    if (dev->sync_signal[i]) nvhcq_signal_destroy(dev->sync_signal[i]);
  free_buffer(&dev->args);
  free_buffer(&dev->local_memory);
  free_buffer(&dev->staging);
  free_buffer(&dev->signal_page);
  free_buffer(&dev->cmd_area);
  free_buffer(&dev->gpfifo_area);
  free(dev->free_slots);
  if (dev->uvm_vaspace_registered) {
    UVM_UNREGISTER_GPU_VASPACE_PARAMS u = {0};
    memcpy(u.gpuUuid.uuid, dev->info.uuid, 16);
    (void)!nvhcq_uvm_call(&dev->rm, UVM_UNREGISTER_GPU_VASPACE, "UVM_UNREGISTER_GPU_VASPACE", &u,
                          offsetof(UVM_UNREGISTER_GPU_VASPACE_PARAMS, rmStatus));
  }
  if (dev->uvm_gpu_registered) {
    UVM_UNREGISTER_GPU_PARAMS u = {0};
    memcpy(u.gpu_uuid.uuid, dev->info.uuid, 16);
    (void)!nvhcq_uvm_call(&dev->rm, UVM_UNREGISTER_GPU, "UVM_UNREGISTER_GPU", &u,
                          offsetof(UVM_UNREGISTER_GPU_PARAMS, rmStatus));
  }
  nvhcq_fault_watch_close(dev);
  if (dev->usermode_map) nvhcq_door->munmap(dev->usermode_map, 0x10000);
  /* Freeing the root client frees every object under it. */
  if (dev->rm.root) nvhcq_rm_free(&dev->rm, 0, dev->rm.root);
  close_fd(&dev->usermode_fd);
  close_fd(&dev->fd_dev);
  close_fd(&dev->fd_uvm2);
  close_fd(&dev->rm.fd_uvm);
  close_fd(&dev->rm.fd_ctl);
  nvhcq_push_finish(&dev->scratch);
  pthread_mutex_destroy(&dev->fault_lock);
  for (uint32_t i = 0; i < dev->stuck_va_count; i++)
    (void)!nvhcq_va_free(nvhcq_va_low(), dev->stuck_va[i], CHANNEL_VA_BYTES);
  free(dev->stuck_va);
  nvhcq_retire(dev);
  if (s) return nvhcq_fail(s, "%s", saved);
  return NVHCQ_SUCCESS;
}

/* A fault or a stop kills the channel group, not the address space: new channels in the same
 * space see all memory as it was. Work that had not completed is discarded; the internal
 * timelines are advanced past it so nothing waits for it. */
nvhcq_status nvhcq_device_recover(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  stop_compute(dev);
  destroy_channels(dev);
  nvhcq_fault_watch_reset(dev);
  dev->fault_text[0] = '\0';
  for (int c = 0; c < 2; c++) nvhcq_signal_set(dev->timeline[c], dev->timeline_value[c]);
  dev->generation++;
  dev->broken = 1; /* until the new channels answer */
  nvhcq_status s = create_channels(dev);
  if (!s) s = setup_channels(dev);
  if (s) return nvhcq_fail_context(s, "recovering GPU %d", dev->index);
  dev->broken = 0;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_get_info(const nvhcq_device *dev, nvhcq_device_info *info) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!info) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_get_info: info is NULL");
  *info = dev->info;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_set_timeout(nvhcq_device *dev, uint32_t timeout_ms) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (timeout_ms == 0) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "timeout must be > 0 ms");
  dev->timeout_ms = dev->compute.timeout_ms = dev->copy.timeout_ms = timeout_ms;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_free_memory(nvhcq_device *dev, uint64_t *free_bytes) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!free_bytes) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "free_bytes is NULL");
  uint64_t kib = 0;
  NVHCQ_TRY(read_fb_info(dev, NULL, &kib));
  *free_bytes = kib << 10;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_synchronize(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (dev->broken)
    return nvhcq_fail(NVHCQ_ERROR_GPU_FAULT,
                      "GPU %d stopped working after an earlier fault or hang; call "
                      "nvhcq_device_recover (memory stays valid) or close the device",
                      dev->index);
  uint64_t v[2] = {0, 0};
  for (int c = 0; c < 2; c++) {
    nvhcq_push_reset(&dev->scratch);
    NVHCQ_TRY(nvhcq_device_submit_scratch(dev, c, &v[c]));
  }
  NVHCQ_TRY(nvhcq_device_wait_timeline(dev, 0, v[0]));
  return nvhcq_device_wait_timeline(dev, 1, v[1]);
}
