/* The mock's RM controls: the profile's facts (build version, classes, GR and FB facts, identity,
 * copy engines) and the channel controls nvhcq makes, each with its parameter size checked. */
#include <stdlib.h>
#include <string.h>

#include "mock/internal.h"

const uint8_t nvhcq_mock_uuid[16] = {0x6d, 0x6f, 0x63, 0x6b, 0x48, 0x32, 0x30, 0x30,
                                     0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};

void mock_uuid_of(uint32_t gpu, uint8_t out[16]) {
  memcpy(out, nvhcq_mock_uuid, 16);
  out[15] = (uint8_t)(out[15] + gpu);
}

int mock_gpu_of_uuid(const uint8_t *uuid) {
  uint8_t u[16];
  for (uint32_t i = 0; i < nvhcq_mock.gpus; i++) {
    mock_uuid_of(i, u);
    if (!memcmp(u, uuid, 16)) return (int)i;
  }
  return -1;
}

int mock_gpu_of_id(uint32_t gpu_id) {
  for (uint32_t i = 0; i < nvhcq_mock.gpus; i++)
    if (MOCK_GPU_ID_OF(i) == gpu_id) return (int)i;
  return -1;
}

/* The classes the profile's driver lists (Hopper's lists Ampere's GPFIFO class too). */
static uint32_t classes(uint32_t *out) {
  uint32_t list[] = {NV01_ROOT_CLIENT,      NV01_DEVICE_0,          NV20_SUBDEVICE_0,
                     NV01_MEMORY_SYSTEM,    NV01_MEMORY_LOCAL_USER, FERMI_VASPACE_A,
                     FERMI_CONTEXT_SHARE_A, KEPLER_CHANNEL_GROUP_A, GT200_DEBUGGER,
                     mock_gpu->usermode,    mock_gpu->gpfifo,       mock_gpu->compute,
                     mock_gpu->copy,        AMPERE_CHANNEL_GPFIFO_A};
  uint32_t n = sizeof list / sizeof list[0] - (mock_gpu->gpfifo == AMPERE_CHANNEL_GPFIFO_A);
  if (out) memcpy(out, list, n * sizeof *list);
  return n;
}

static uint32_t tpc_mask(uint32_t gpc) {
  return gpc >= mock_gpu->gpcs ? 0 : (1u << mock_gpu->tpcs[gpc]) - 1;
}

static uint32_t gr_info(uint32_t index) {
  switch (index) {
  case NV2080_CTRL_GR_INFO_INDEX_SM_VERSION:
    return mock_gpu->sm_version;
  case NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM:
    return mock_gpu->warps_per_sm;
  case NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS:
    return (uint32_t)mock_gpu->gpcs;
  case NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC:
    return mock_gpu->tpcs[0];
  case NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC:
    return 2;
  default:
    return 0;
  }
}

static uint32_t fb_info(uint32_t gpu, uint32_t index) {
  uint64_t used = mock_vidmem_used(gpu) >> 10;
  uint64_t free_kib = used < MOCK_FB_KIB ? MOCK_FB_KIB - used : 0;
  switch (index) {
  case NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE:
  case NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE:
  case NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE:
    return (uint32_t)MOCK_FB_KIB;
  case NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE:
    return (uint32_t)free_kib;
  case NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE:
    return 50u << 20; /* the H200's 50 MiB */
  case NV2080_CTRL_FB_INFO_INDEX_BUS_WIDTH:
    return 6144; /* six HBM3e stacks */
  default:
    return 0;
  }
}

static uint32_t class_list(NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS *p) {
  uint32_t n = classes(NULL);
  if (!p->classList) {
    p->numClasses = n;
    return MOCK_NV_OK;
  }
  if (p->numClasses < n) return MOCK_ERR_INVALID_ARGUMENT;
  p->numClasses = classes((uint32_t *)(uintptr_t)p->classList);
  return MOCK_NV_OK;
}

static uint32_t gr_get_info(NV2080_CTRL_GR_GET_INFO_PARAMS *p) {
  if (!p->grInfoList || p->grInfoListSize == 0 || p->grInfoListSize > 0x100)
    return MOCK_ERR_INVALID_ARGUMENT;
  NV2080_CTRL_GR_INFO *list = (NV2080_CTRL_GR_INFO *)(uintptr_t)p->grInfoList;
  for (uint32_t i = 0; i < p->grInfoListSize; i++) list[i].data = gr_info(list[i].index);
  return MOCK_NV_OK;
}

static uint32_t fb_get_info(uint32_t gpu, NV2080_CTRL_FB_GET_INFO_V2_PARAMS *p) {
  if (p->fbInfoListSize > 128) return MOCK_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < p->fbInfoListSize; i++)
    p->fbInfoList[i].data = fb_info(gpu, p->fbInfoList[i].index);
  return MOCK_NV_OK;
}

static uint32_t gid_info(uint32_t gpu, NV2080_CTRL_GPU_GET_GID_INFO_PARAMS *p) {
  if (p->flags != NV2080_GPU_CMD_GPU_GET_GID_FLAGS_BINARY) return MOCK_ERR_NOT_SUPPORTED;
  mock_uuid_of(gpu, p->data);
  p->length = 16;
  return MOCK_NV_OK;
}

/* Copy engines 0-9; 0 and 1 run with the graphics engine; 2 has the most physical engines. */
static uint32_t ce_caps(NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS *p) {
  memset(p, 0, sizeof *p);
  p->present = 0x3ff;
  p->capsTbl[0][0] = p->capsTbl[1][0] = NV2080_CTRL_CE_CAPS_CE_GRCE;
  return MOCK_NV_OK;
}

static uint32_t ce_pce_mask(NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS *p) {
  p->pceMask = p->ceEngineType == NV2080_ENGINE_TYPE_COPY(2) ? 0xf : 0x1;
  return MOCK_NV_OK;
}

static mock_channel *channel_of(uint32_t client, uint32_t handle) {
  mock_obj *o = mock_find(client, handle);
  return o ? o->ch : NULL;
}

static uint32_t channel_control(const NVOS54_PARAMETERS *p, void *params) {
  mock_channel *ch = channel_of(p->hClient, p->hObject);
  if (!ch) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  switch (p->cmd) {
  case NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN:
    ((NVC36F_CTRL_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS *)params)->workSubmitToken =
        mock_channel_token(ch);
    return MOCK_NV_OK;
  case NV906F_CTRL_CMD_RESET_CHANNEL:
    mock_channel_fault(ch, MOCK_XID_RESET, 0, "reset by the client");
    return MOCK_NV_OK;
  case NV906F_CTRL_CMD_GET_MMU_FAULT_INFO:
    mock_channel_fault_info(ch, params);
    return MOCK_NV_OK;
  default:
    return MOCK_NV_OK; /* NVA06F_CTRL_CMD_GPFIFO_SCHEDULE */
  }
}

/* The parameter size each control takes (the branch-dependent ones as the 580 branch has them). */
static uint32_t params_size(uint32_t cmd) {
  switch (cmd) {
  case NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2:
    return sizeof(NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS);
  case NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2:
    return sizeof(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS);
  case NV0080_CTRL_CMD_GPU_GET_CLASSLIST:
    return sizeof(NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS);
  case NV2080_CTRL_CMD_GPU_GET_NAME_STRING:
    return sizeof(NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS);
  case NV2080_CTRL_CMD_GPU_GET_GID_INFO:
    return sizeof(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS);
  case NV2080_CTRL_CMD_GR_GET_INFO:
    return sizeof(NV2080_CTRL_GR_GET_INFO_PARAMS);
  case NV2080_CTRL_CMD_FB_GET_INFO_V2:
    return sizeof(NV2080_CTRL_FB_GET_INFO_V2_PARAMS);
  case NVA06C_CTRL_CMD_GPFIFO_SCHEDULE:
  case NVA06F_CTRL_CMD_GPFIFO_SCHEDULE:
    return 3;
  case NV2080_CTRL_CMD_PERF_BOOST:
    return sizeof(NV2080_CTRL_PERF_BOOST_PARAMS);
  case NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN:
    return sizeof(NVC36F_CTRL_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS);
  case NV2080_CTRL_CMD_GR_GET_GPC_MASK:
    return sizeof(NV2080_CTRL_GR_GET_GPC_MASK_PARAMS);
  case NV2080_CTRL_CMD_GR_GET_TPC_MASK:
    return sizeof(NV2080_CTRL_GR_GET_TPC_MASK_PARAMS);
  case NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE:
    return sizeof(NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS);
  case NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK:
    return sizeof(NV83DE_CTRL_DEBUG_SET_EXCEPTION_MASK_PARAMS);
  case NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES:
    return sizeof(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS);
  case NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO:
    return sizeof(NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS);
  case NV906F_CTRL_CMD_GET_MMU_FAULT_INFO:
    return sizeof(NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS);
  case NV906F_CTRL_CMD_RESET_CHANNEL:
    return sizeof(NV906F_CTRL_CMD_RESET_CHANNEL_PARAMS);
  case NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK:
    return sizeof(NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS);
  case NV2080_CTRL_CMD_CE_GET_ALL_CAPS:
    return sizeof(NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS);
  case NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX:
    return sizeof(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_MATRIX_PARAMS);
  case NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD:
    return sizeof(NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS);
  case NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD:
    return sizeof(NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS);
  case NV0041_CTRL_CMD_GET_SURFACE_INFO:
    return sizeof(NV0041_CTRL_GET_SURFACE_INFO_PARAMS);
  case NV2080_CTRL_CMD_BUS_GET_PCI_INFO:
    return sizeof(NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS);
  default:
    return 0;
  }
}

/* Every pair of mock GPUs is linked as two H200s of an HGX board are (NVLink, reads, writes,
 * atomics); a GPU with itself has loopback. NVHCQ_MOCK_P2P=0 leaves the pairs without a path. */
static uint32_t p2p_matrix(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_MATRIX_PARAMS *p) {
  if (!p->grpACount || p->grpACount > NV0000_CTRL_SYSTEM_MAX_P2P_GROUP_GPUS ||
      p->grpBCount > NV0000_CTRL_SYSTEM_MAX_P2P_GROUP_GPUS)
    return MOCK_ERR_INVALID_ARGUMENT;
  const char *env = getenv("NVHCQ_MOCK_P2P");
  int linked = !env || strcmp(env, "0");
  uint32_t nb = p->grpBCount ? p->grpBCount : p->grpACount;
  const uint32_t *b = p->grpBCount ? p->gpuIdGrpB : p->gpuIdGrpA;
  for (uint32_t i = 0; i < p->grpACount; i++)
    for (uint32_t j = 0; j < nb; j++) {
      int x = mock_gpu_of_id(p->gpuIdGrpA[i]), y = mock_gpu_of_id(b[j]);
      if (x < 0 || y < 0) return MOCK_ERR_INVALID_ARGUMENT;
      uint32_t caps = x == y ? NV0000_P2P_CAP_LOOPBACK : 0;
      if (x != y && linked)
        caps = NV0000_P2P_CAP_READS | NV0000_P2P_CAP_WRITES | NV0000_P2P_CAP_NVLINK |
               NV0000_P2P_CAP_ATOMICS;
      p->p2pCaps[i][j] = caps;
      p->a2bOptimalReadCes[i][j] = p->a2bOptimalWriteCes[i][j] = caps ? 0x4 : 0;
      p->b2aOptimalReadCes[i][j] = p->b2aOptimalWriteCes[i][j] = caps ? 0x4 : 0;
    }
  return MOCK_NV_OK;
}

/* The profile's device ID; every mock board is subsystem 0x1000 of NVIDIA's (a made-up board). */
static uint32_t pci_info(NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS *p) {
  *p = (NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS){.pciDeviceId =
                                                 (uint32_t)mock_gpu->device_id << 16 | 0x10de,
                                             .pciSubSystemId = 0x1000u << 16 | 0x10de,
                                             .pciRevisionId = 0xa1,
                                             .pciExtDeviceId = mock_gpu->device_id};
  return MOCK_NV_OK;
}

static uint32_t gpu_control(uint32_t gpu, uint32_t cmd, void *params) {
  switch (cmd) {
  case NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2:
    strcpy(((NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS *)params)->driverVersionBuffer,
           MOCK_VERSION);
    return MOCK_NV_OK;
  case NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: {
    NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS *p = params;
    int i = mock_gpu_of_id(p->gpuId);
    if (i < 0) return MOCK_ERR_INVALID_ARGUMENT;
    p->deviceInstance = (uint32_t)i;
    p->subDeviceInstance = 0;
    return MOCK_NV_OK;
  }
  case NV0080_CTRL_CMD_GPU_GET_CLASSLIST:
    return class_list(params);
  case NV2080_CTRL_CMD_GPU_GET_NAME_STRING:
    strcpy((char *)((NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS *)params)->gpuNameString,
           mock_gpu->name);
    return MOCK_NV_OK;
  case NV2080_CTRL_CMD_GPU_GET_GID_INFO:
    return gid_info(gpu, params);
  case NV2080_CTRL_CMD_GR_GET_INFO:
    return gr_get_info(params);
  case NV2080_CTRL_CMD_FB_GET_INFO_V2:
    return fb_get_info(gpu, params);
  case NV2080_CTRL_CMD_GR_GET_GPC_MASK:
    ((NV2080_CTRL_GR_GET_GPC_MASK_PARAMS *)params)->gpcMask = (1u << mock_gpu->gpcs) - 1;
    return MOCK_NV_OK;
  case NV2080_CTRL_CMD_GR_GET_TPC_MASK: {
    NV2080_CTRL_GR_GET_TPC_MASK_PARAMS *p = params;
    p->tpcMask = tpc_mask(p->gpcId);
    return MOCK_NV_OK;
  }
  case NV2080_CTRL_CMD_CE_GET_ALL_CAPS:
    return ce_caps(params);
  case NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX:
    return p2p_matrix(params);
  case NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK:
    return ce_pce_mask(params);
  case NV2080_CTRL_CMD_BUS_GET_PCI_INFO:
    return pci_info(params);
  default:
    return MOCK_NV_OK; /* perf boost; the debugger's controls: nothing recorded */
  }
}

/* The target channel's saved SM error, as SM 0's (the mock runs a grid on one "SM"). */
static uint32_t sm_error_states(uint32_t client,
                                NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS *q) {
  uint32_t channel = q->hTargetChannel, start = q->startingSM, count = q->numSMsToRead;
  if (count > NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL) return MOCK_ERR_INVALID_ARGUMENT;
  mock_obj *ch = mock_find(client, channel);
  if (!ch || !ch->ch) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  memset(q, 0, sizeof *q);
  q->hTargetChannel = channel;
  q->startingSM = start;
  q->numSMsToRead = count;
  if (start == 0 && count > 0) mock_channel_sm_error(ch->ch, &q->smErrorStateArray[0]);
  return MOCK_NV_OK;
}

/* RM's record of the MMU faults of the SMs in the debugger's context: kept only where no UVM space
 * handles them (UVM's event ring hears of those instead). */
static uint32_t mmu_fault_info(const mock_obj *debugger,
                               NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS *out) {
  memset(out, 0, sizeof *out);
  mock_obj *engine = debugger->hclass == GT200_DEBUGGER && debugger->target
                         ? mock_find(debugger->client, debugger->target)
                         : NULL;
  mock_obj *channel = engine ? mock_find(engine->client, engine->parent) : NULL;
  if (channel && channel->ch) mock_channel_rm_fault(channel->ch, out);
  return MOCK_NV_OK;
}

/* A channel's compute preemption mode, as RM checks it: the target is a subdevice, the handle a
 * channel of the client, the compute mode given and one of WFI, CTA and CILP. */
static uint32_t set_preemption(uint32_t client, const mock_obj *target,
                               const NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS *q) {
  mock_obj *ch = mock_find(client, q->hChannel);
  if (target->hclass != NV20_SUBDEVICE_0 || !ch || !ch->ch) return MOCK_ERR_INVALID_ARGUMENT;
  if (!(q->flags & NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_FLAGS_CILP_SET) ||
      q->cilpPreemptMode > 2)
    return MOCK_ERR_INVALID_ARGUMENT;
  ch->preemption = q->cilpPreemptMode;
  return MOCK_NV_OK;
}

uint32_t mock_control(const NVOS54_PARAMETERS *p, void *params) {
  mock_obj *client = mock_find(p->hClient, p->hClient);
  if (!client || client->hclass != NV01_ROOT_CLIENT) return MOCK_ERR_INVALID_CLIENT;
  mock_obj *target = mock_find(p->hClient, p->hObject);
  if (!target) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  uint32_t want = params_size(p->cmd);
  if (!want) return MOCK_ERR_NOT_SUPPORTED;
  /* The name string is 68 bytes from 595 on; the FB list holds 57 entries on 570. */
  int size_ok = p->paramsSize == want ||
                (p->cmd == NV2080_CTRL_CMD_GPU_GET_NAME_STRING && p->paramsSize == 68) ||
                (p->cmd == NV2080_CTRL_CMD_FB_GET_INFO_V2 && p->paramsSize == 460) ||
                (p->cmd == NVA06C_CTRL_CMD_GPFIFO_SCHEDULE && p->paramsSize == 2);
  if (!size_ok || !params) return MOCK_ERR_INVALID_PARAM_STRUCT;
  if (p->cmd == NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES)
    return sm_error_states(p->hClient, params);
  if (p->cmd == NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO) return mmu_fault_info(target, params);
  if (p->cmd == NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD)
    return target == client ? mock_export_object(p->hClient, params) : MOCK_ERR_INVALID_ARGUMENT;
  if (p->cmd == NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD)
    return target == client ? mock_import_object(p->hClient, params) : MOCK_ERR_INVALID_ARGUMENT;
  if (p->cmd == NV0041_CTRL_CMD_GET_SURFACE_INFO) return mock_surface_info(target, params);
  if (p->cmd == NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE)
    return set_preemption(p->hClient, target, params);
  if ((p->cmd >> 16) == 0x906f || (p->cmd >> 16) == 0xc36f ||
      p->cmd == NVA06F_CTRL_CMD_GPFIFO_SCHEDULE)
    return channel_control(p, params);
  return gpu_control(target->gpu, p->cmd, params);
}
