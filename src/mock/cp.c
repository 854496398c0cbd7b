/* The mock's command processor: one thread per channel consumes GPFIFO entries, decodes the
 * host, copy and compute methods nvhcq emits (semaphores, copies, QMD launches and their chains)
 * and stops the channel with an Xid in its error notifier when a stream is malformed or a failure
 * is injected (inject.c); the doorbell is heard only where the injection loses one. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi/methods.h"
#include "hw/push.h"
#include "hw/qmd.h"
#include "mock/internal.h"
#include "mock/mock.h"

#define METHODS    0x1000u /* dword addresses 11:0 */
#define MAX_CHAIN  4096u
#define GP_GET_IDX (NVHCQ_USERD_GP_GET / 4)
#define GP_PUT_IDX (NVHCQ_USERD_GP_PUT / 4)

struct mock_channel {
  pthread_t thread;
  int space; /* the address space its work translates through (mock_thread_space) */
  int uvm;   /* whether a UVM fd's: UVM hears of its faults, RM keeps no record of them */
  int started, stop, faulted;
  uint64_t *ring;
  uint32_t entries, token, engine_type;
  uint32_t *userd;
  uint8_t *notifier;
  uint32_t engines[4];
  uint32_t subc[MOCK_SUBCHANNELS];
  uint32_t host[METHODS / 32]; /* host methods 0x000-0x0fc */
  uint32_t copy[METHODS], compute[METHODS];
  uint64_t fault_address;
  char fault_what[32];
  NV83DE_SM_ERROR_STATE_REGISTERS sm_error; /* written before faulted is set */
  /* RM's record of the SMs' MMU faults, kept where the channel's address space is no UVM fd's
   * (NVHCQ_UVM=off, and a device's channels before it moves onto UVM). */
  NV83DE_MMU_FAULT_INFO_ENTRY rm_fault;
  uint32_t rm_faults;
  /* Doorbells: the client's doorbell word (NULL if it has none, or it was freed), GP_PUT when the
   * channel last looked, and an injected lost doorbell (the channel waits until GP_PUT moves past
   * lost_put or the token is written again) or stuck channel (it hears nothing more). */
  uint32_t *doorbell;
  uint32_t seen_put, lost_put;
  int lost, stuck;
};

/* ---- faults ---- */

void mock_channel_fault(mock_channel *ch, uint32_t xid, uint64_t address, const char *what) {
  if (__atomic_exchange_n(&ch->faulted, 1, __ATOMIC_ACQ_REL)) return;
  ch->fault_address = address;
  snprintf(ch->fault_what, sizeof ch->fault_what, "%s", what);
  uint64_t now = mock_now_ns();
  uint32_t own = __atomic_load_n(&ch->engine_type, __ATOMIC_ACQUIRE);
  uint16_t engine = xid == MOCK_XID_PBDMA ? 0x27
                    : xid == MOCK_XID_GR  ? NV2080_ENGINE_TYPE_GRAPHICS
                    : own                 ? (uint16_t)own
                                          : (uint16_t)NV2080_ENGINE_TYPE_COPY(0);
  memcpy(ch->notifier, &now, 8);
  memcpy(ch->notifier + 8, &xid, 4);
  memcpy(ch->notifier + 12, &engine, 2);
  __atomic_store_n((uint16_t *)(ch->notifier + 14), (uint16_t)0xffff, __ATOMIC_RELEASE);
}

void mock_channel_sm_error(mock_channel *ch, NV83DE_SM_ERROR_STATE_REGISTERS *out) {
  memset(out, 0, sizeof *out);
  if (__atomic_load_n(&ch->faulted, __ATOMIC_ACQUIRE)) *out = ch->sm_error;
}

void mock_channel_fault_info(mock_channel *ch, NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS *out) {
  memset(out, 0, sizeof *out);
  if (!__atomic_load_n(&ch->faulted, __ATOMIC_ACQUIRE)) return;
  out->addrHi = (uint32_t)(ch->fault_address >> 32);
  out->addrLo = (uint32_t)ch->fault_address;
  memcpy(out->faultString, ch->fault_what, sizeof out->faultString);
  out->faultString[sizeof out->faultString - 1] = 0;
}

void mock_channel_rm_fault(mock_channel *ch, NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS *out) {
  memset(out, 0, sizeof *out);
  if (!__atomic_load_n(&ch->faulted, __ATOMIC_ACQUIRE) || !ch->rm_faults) return;
  out->mmuFaultInfoList[0] = ch->rm_fault;
  out->count = ch->rm_faults;
}

static int fault(mock_channel *ch, uint32_t xid, uint64_t address, const char *fmt, unsigned a,
                 unsigned b) {
  char what[96];
  snprintf(what, sizeof what, fmt, a, b);
  fprintf(stderr, "nvhcq mock: channel %u stopped, Xid %u: %s (address 0x%llx)\n", ch->token, xid,
          what, (unsigned long long)address);
  mock_channel_fault(ch, xid, address, what);
  return -1;
}

/* ---- memory ---- */

/* An MMU fault of the channel's copy engine or host: UVM hears of it first (as a fault of its
 * hub client) where it handles the channel's address space, then the channel stops. */
static void *unmapped(mock_channel *ch, uint64_t va, uint64_t len, int write) {
  if (ch->uvm) mock_uvm_report_fault(ch->space, va, write, 2);
  fault(ch, MOCK_XID_MMU, va,
        write ? "MMU fault: write of %u bytes" : "MMU fault: read of %u bytes", (unsigned)len, 0);
  return NULL;
}

static void *gpu(mock_channel *ch, uint64_t va, uint64_t len, int write) {
  void *p = nvhcq_mock_gpu_pointer(va, len ? len : 1);
  return p ? p : unmapped(ch, va, len, write);
}

static void sleep_ns(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* A semaphore release: the timestamp (if any) before the payload that announces it. */
static int release(mock_channel *ch, uint64_t va, uint64_t payload, int payload64, int stamp) {
  uint8_t *p = gpu(ch, va, stamp ? 16 : payload64 ? 8 : 4, 1);
  if (!p) return -1;
  if (stamp) __atomic_store_n((uint64_t *)(p + 8), mock_now_ns(), __ATOMIC_RELAXED);
  if (payload64)
    __atomic_store_n((uint64_t *)p, payload, __ATOMIC_RELEASE);
  else
    __atomic_store_n((uint32_t *)p, (uint32_t)payload, __ATOMIC_RELEASE);
  return 0;
}

static int acquired(uint32_t op, uint64_t now, uint64_t want, int payload64) {
  if (!payload64) now = (uint32_t)now, want = (uint32_t)want;
  switch (op) {
  case NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE:
    return now == want;
  case NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ:
    return now >= want;
  case NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND:
    return (now & want) != 0;
  case NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR:
    return (uint64_t)(~(now | want) & (payload64 ? ~0ull : 0xffffffffull)) != 0;
  default:
    return payload64 ? (int64_t)(now - want) >= 0 : (int32_t)(now - want) >= 0;
  }
}

/* Blocks until the semaphore holds the payload, or the channel is stopped. */
static int acquire(mock_channel *ch, uint64_t va, uint64_t want, uint32_t op, int payload64) {
  uint8_t *p = gpu(ch, va, payload64 ? 8 : 4, 0);
  if (!p) return -1;
  for (unsigned spins = 0;; spins++) {
    uint64_t now = payload64 ? __atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE)
                             : __atomic_load_n((uint32_t *)p, __ATOMIC_ACQUIRE);
    if (acquired(op, now, want, payload64)) return 0;
    if (__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE)) return -1;
    if (spins < 64)
      sched_yield();
    else
      sleep_ns(20000);
  }
}

/* ---- host methods ---- */

static int sem_execute(mock_channel *ch, uint32_t exec) {
  const uint32_t *h = ch->host;
  uint64_t va = h[NVC56F_SEM_ADDR_LO / 4] | (uint64_t)h[NVC56F_SEM_ADDR_HI / 4] << 32;
  uint64_t payload = h[NVC56F_SEM_PAYLOAD_LO / 4] | (uint64_t)h[NVC56F_SEM_PAYLOAD_HI / 4] << 32;
  uint32_t op = exec & 7;
  int payload64 = (exec & NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT) != 0;
  if (op == NVC56F_SEM_EXECUTE_OPERATION_RELEASE)
    return release(ch, va, payload, payload64, (exec & NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP) != 0);
  if (op <= NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR) return acquire(ch, va, payload, op, payload64);
  return fault(ch, MOCK_XID_PBDMA, va, "SEM_EXECUTE operation %u unknown", op, 0);
}

static int is_engine(const mock_channel *ch, uint32_t hclass) {
  for (int i = 0; i < 4; i++)
    if (hclass && __atomic_load_n(&ch->engines[i], __ATOMIC_ACQUIRE) == hclass) return 1;
  return 0;
}

static int host_method(mock_channel *ch, unsigned subc, unsigned method, uint32_t value) {
  ch->host[method / 4] = value;
  switch (method) {
  case NVC6C0_SET_OBJECT:
    if (!is_engine(ch, value))
      return fault(ch, MOCK_XID_PBDMA, 0, "SET_OBJECT 0x%x: no such object on subchannel %u", value,
                   subc);
    ch->subc[subc] = value;
    return 0;
  case NVC56F_SEM_EXECUTE:
    return sem_execute(ch, value);
  case NVC56F_NON_STALL_INTERRUPT:
  case NVC56F_WFI:
  case NVC56F_SEM_ADDR_LO:
  case NVC56F_SEM_ADDR_HI:
  case NVC56F_SEM_PAYLOAD_LO:
  case NVC56F_SEM_PAYLOAD_HI:
    return 0;
  default:
    return fault(ch, MOCK_XID_PBDMA, 0, "unknown host method 0x%03x on subchannel %u", method,
                 subc);
  }
}

/* ---- copy engine ---- */

/* ROBUST_CHANNEL_CE<n>_ERROR, the Xid of copy engine n (nverror.h's numbers). */
static uint32_t ce_xid(uint32_t engine_type) {
  static const uint8_t xids[] = {39, 40, 41, 70, 71, 72, 75, 76, 77, 85};
  uint32_t n = engine_type >= 0x34 ? engine_type - 0x34 + 10 : engine_type - 0x09;
  return n < 10 ? xids[n] : 126 + (n - 10);
}

/* An injected copy-engine error: the engine stops the channel without an MMU fault record. */
static int ce_error(mock_channel *ch) {
  uint32_t engine = __atomic_load_n(&ch->engine_type, __ATOMIC_ACQUIRE);
  uint32_t xid = ce_xid(engine ? engine : NV2080_ENGINE_TYPE_COPY(0));
  fprintf(stderr, "nvhcq mock: channel %u stopped, Xid %u: injected copy engine error\n", ch->token,
          xid);
  mock_channel_fault(ch, xid, 0, "");
  return -1;
}

/* Whether a copy's source or destination runs from one mapping into the next (mappings side by
 * side, whose host memory is not contiguous). */
static int spans_ranges(uint64_t src, uint64_t dst, uint64_t n) {
  uint64_t rs = 0, rd = 0;
  if (!n || mock_inject_access(src, n) || mock_inject_access(dst, n)) return 0;
  void *s = mock_space_run(mock_thread_space, src, n, &rs);
  void *d = mock_space_run(mock_thread_space, dst, n, &rd);
  return s && d && (rs < n || rd < n);
}

/* Such a copy, mapping by mapping, as the copy engine walks the page tables. */
static int copy_pieces(mock_channel *ch, uint64_t dst, uint64_t src, uint64_t n) {
  while (n) {
    uint64_t rs = 0, rd = 0;
    void *s = mock_space_run(mock_thread_space, src, n, &rs);
    if (!s) return unmapped(ch, src, n, 0), -1;
    void *d = mock_space_run(mock_thread_space, dst, rs, &rd);
    if (!d) return unmapped(ch, dst, rs, 1), -1;
    mock_copy(d, s, rd);
    src += rd, dst += rd, n -= rd;
  }
  return 0;
}

static int launch_dma(mock_channel *ch, uint32_t flags) {
  const uint32_t *c = ch->copy;
  if (flags & 3) {
    int inject = mock_inject_copy();
    if (inject == MOCK_INJECT_XID_CE) return ce_error(ch);
    uint64_t src = (uint64_t)c[NVC6B5_OFFSET_IN_UPPER / 4] << 32 | c[NVC6B5_OFFSET_IN_LOWER / 4];
    uint64_t dst = (uint64_t)c[NVC6B5_OFFSET_OUT_UPPER / 4] << 32 | c[NVC6B5_OFFSET_OUT_LOWER / 4];
    uint32_t n = c[NVC6B5_LINE_LENGTH_IN / 4];
    if (!inject && spans_ranges(src, dst, n)) {
      if (copy_pieces(ch, dst, src, n)) return -1;
    } else {
      void *s = gpu(ch, src, n, 0);
      void *d = !s                               ? NULL
                : inject == MOCK_INJECT_MMU_COPY ? unmapped(ch, dst, n, 1)
                                                 : gpu(ch, dst, n, 1);
      if (!d) return -1;
      mock_copy(d, s, n);
    }
  }
  uint32_t sem = (flags >> 3) & 3;
  if (!sem) return 0;
  uint64_t va = (uint64_t)c[NVC6B5_SET_SEMAPHORE_A / 4] << 32 | c[NVC6B5_SET_SEMAPHORE_B / 4];
  uint64_t payload = c[NVC6B5_SET_SEMAPHORE_PAYLOAD / 4] |
                     (uint64_t)c[NVC7B5_SET_SEMAPHORE_PAYLOAD_UPPER / 4] << 32;
  int payload64 = (flags & NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE_64BIT) != 0;
  return release(ch, va, payload, payload64, sem == 2);
}

/* ---- compute: QMDs ---- */

static uint64_t field(nvhcq_qmd_version v, const uint32_t *q, nvhcq_qmd_field f) {
  return nvhcq_qmd_get(v, q, f);
}

static uint64_t pair(nvhcq_qmd_version v, const uint32_t *q, nvhcq_qmd_field lo, nvhcq_qmd_field hi,
                     nvhcq_qmd_field lo_s, nvhcq_qmd_field hi_s, unsigned s) {
  uint64_t plain = field(v, q, lo) | field(v, q, hi) << 32;
  return plain ? plain : (field(v, q, lo_s) | field(v, q, hi_s) << 32) << s;
}

/* A grid of clusters (V04, V05): the QMD's grid counts clusters; g's counts blocks. */
static void read_cluster(nvhcq_qmd_version v, const uint32_t *q, nvhcq_mock_grid *g) {
  if (v == NVHCQ_QMD_V03 || field(v, q, NVHCQ_QMD_QMD_TYPE) != NVHCQ_QMD_TYPE_GRID_GPC_CGA) return;
  g->cluster[0] = (uint32_t)field(v, q, NVHCQ_QMD_GPC_CGA_WIDTH);
  g->cluster[1] = (uint32_t)field(v, q, NVHCQ_QMD_GPC_CGA_HEIGHT);
  g->cluster[2] = (uint32_t)field(v, q, NVHCQ_QMD_GPC_CGA_DEPTH);
  for (int i = 0; i < 3; i++) g->grid[i] *= g->cluster[i];
}

/* The TPCs a grid is kept to (V04, V05): what TPC_DISABLE_MASK leaves enabled, if it is valid. */
static void read_tpc_mask(nvhcq_qmd_version v, const uint32_t *q, nvhcq_mock_grid *g) {
  static const nvhcq_qmd_field words[4] = {
      NVHCQ_QMD_TPC_DISABLE_MASK_0, NVHCQ_QMD_TPC_DISABLE_MASK_1, NVHCQ_QMD_TPC_DISABLE_MASK_2,
      NVHCQ_QMD_TPC_DISABLE_MASK_3};
  if (v == NVHCQ_QMD_V03 || !field(v, q, NVHCQ_QMD_TPC_DISABLE_MASK_VALID)) return;
  g->tpc_masked = 1;
  for (int w = 0; w < 4; w++) g->tpc_enabled[w] = ~(uint32_t)field(v, q, words[w]);
}

static void read_grid(nvhcq_qmd_version v, const uint32_t *q, nvhcq_mock_grid *g) {
  g->qmd_version = v;
  g->program_address =
      pair(v, q, NVHCQ_QMD_PROGRAM_ADDRESS_LOWER, NVHCQ_QMD_PROGRAM_ADDRESS_UPPER,
           NVHCQ_QMD_PROGRAM_ADDRESS_LOWER_SHIFTED4, NVHCQ_QMD_PROGRAM_ADDRESS_UPPER_SHIFTED4, 4);
  g->grid[0] = (uint32_t)field(v, q, NVHCQ_QMD_GRID_WIDTH);
  g->grid[1] = (uint32_t)field(v, q, NVHCQ_QMD_GRID_HEIGHT);
  g->grid[2] = (uint32_t)field(v, q, NVHCQ_QMD_GRID_DEPTH);
  for (int i = 0; i < 3; i++)
    g->block[i] = (uint32_t)field(v, q, (nvhcq_qmd_field)(NVHCQ_QMD_CTA_THREAD_DIMENSION0 + i));
  read_cluster(v, q, g);
  read_tpc_mask(v, q, g);
  g->shared_bytes = (uint32_t)(field(v, q, NVHCQ_QMD_SHARED_MEMORY_SIZE) |
                               field(v, q, NVHCQ_QMD_SHARED_MEMORY_SIZE_SHIFTED7) << 7);
  g->local_low_bytes =
      (uint32_t)(field(v, q, NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE) |
                 field(v, q, NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4) << 4);
  g->local_high_bytes =
      (uint32_t)(field(v, q, NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE) |
                 field(v, q, NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4) << 4);
  g->cbank0_address =
      pair(v, q, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_0, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_0,
           NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0,
           NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6_0, 6);
  g->cbank0_bytes = (uint32_t)field(v, q, NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0) << 4;
  g->register_count = (uint32_t)field(v, q, NVHCQ_QMD_REGISTER_COUNT);
}

/* What the compute class was told about the shader windows and local memory. */
static void read_windows(const mock_channel *ch, nvhcq_mock_grid *g) {
  const uint32_t *c = ch->compute;
  g->shared_window = (uint64_t)c[NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A / 4] << 32 |
                     c[NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A / 4 + 1];
  g->local_window = (uint64_t)c[NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A / 4] << 32 |
                    c[NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A / 4 + 1];
  g->local_memory = (uint64_t)c[NVC6C0_SET_SHADER_LOCAL_MEMORY_A / 4] << 32 |
                    c[NVC6C0_SET_SHADER_LOCAL_MEMORY_A / 4 + 1];
  g->local_per_tpc = (uint64_t)c[NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A / 4] << 32 |
                     c[NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A / 4 + 1];
}

static int qmd_releases(mock_channel *ch, nvhcq_qmd_version v, const uint32_t *q) {
  for (unsigned s = 0; s < NVHCQ_QMD_RELEASES; s++) {
#define RF(name) field(v, q, (nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_##name + s))
    if (!RF(ENABLE)) continue;
    uint64_t va = RF(ADDRESS_LOWER) | RF(ADDRESS_UPPER) << 32;
    uint64_t payload = RF(PAYLOAD_LOWER) | RF(PAYLOAD_UPPER) << 32;
    int four = RF(STRUCTURE_SIZE) == NVHCQ_QMD_RELEASE_STRUCTURE_SIZE_FOUR_WORDS;
    if (release(ch, va, payload, RF(PAYLOAD64B) != 0, four)) return -1;
#undef RF
  }
  return 0;
}

/* An injected SM exception: the grid does not run, and the SM's saved registers say it met an
 * out-of-range address at the kernel's first instruction. */
static int sm_exception(mock_channel *ch, const nvhcq_mock_grid *g) {
  ch->sm_error = (NV83DE_SM_ERROR_STATE_REGISTERS){.hwwWarpEsr = 0x0e,
                                                   .hwwWarpEsrPc = (uint32_t)g->program_address,
                                                   .hwwWarpEsrPc64 = g->program_address};
  return fault(ch, MOCK_XID_GR, g->program_address,
               "injected SM exception: warp error 0x%x on SM %u", 0x0e, 0);
}

/* What the driver learns of an MMU fault of the SMs: UVM's events where UVM handles the address
 * space, else RM's own record, which a debugger object reads. */
static void report_sm_mmu_fault(mock_channel *ch, uint64_t address, int write) {
  if (ch->uvm) {
    mock_uvm_report_fault(ch->space, address, write, 1);
    return;
  }
  ch->rm_fault = (NV83DE_MMU_FAULT_INFO_ENTRY){
      .faultAddress = address & ~4095ull, .faultType = 0, .accessType = write ? 1u : 0u};
  ch->rm_faults++;
}

static int run_qmd(mock_channel *ch, nvhcq_qmd_version v, uint64_t at, const uint32_t *q) {
  char error[512] = "";
  uint64_t fault_address = 0;
  uint32_t xid = MOCK_XID_GR;
  nvhcq_mock_sm_error sm = {0};
  nvhcq_mock_grid g = {.qmd_address = at,
                       .sm_error = &sm,
                       .stop = &ch->stop,
                       .error = error,
                       .error_size = sizeof error,
                       .fault_address = &fault_address,
                       .xid = &xid};
  read_grid(v, q, &g);
  read_windows(ch, &g);
  int inject = mock_inject_grid();
  if (inject == MOCK_INJECT_XID_GR) return sm_exception(ch, &g);
  g.fault_first_access = inject == MOCK_INJECT_MMU_KERNEL;
  if (nvhcq_mock_run_grid(&g)) {
    /* A grid cut short because the channel is being stopped is no fault of its own. */
    if (__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE)) return -1;
    fprintf(stderr, "nvhcq mock: %s\n", error[0] ? error : "the grid failed");
    if (xid == MOCK_XID_MMU) report_sm_mmu_fault(ch, fault_address, sm.write);
    ch->sm_error = (NV83DE_SM_ERROR_STATE_REGISTERS){.hwwGlobalEsr = sm.global_error,
                                                     .hwwWarpEsr = sm.warp_error,
                                                     .hwwWarpEsrPc = (uint32_t)sm.pc,
                                                     .hwwEsrAddr = sm.address,
                                                     .hwwWarpEsrPc64 = sm.pc};
    mock_channel_fault(ch, xid, fault_address ? fault_address : g.program_address,
                       error[0] ? error : "the grid failed");
    return -1;
  }
  return qmd_releases(ch, v, q);
}

/* The QMD SEND_PCAS_A named, and each dependent QMD it schedules. */
static int launch(mock_channel *ch, uint32_t hclass) {
  nvhcq_qmd_version v = nvhcq_qmd_version_for_class(hclass);
  size_t size = nvhcq_qmd_size(v);
  uint64_t at = (uint64_t)ch->compute[NVC6C0_SEND_PCAS_A / 4] << 8;
  for (unsigned n = 0; n < MAX_CHAIN; n++) {
    const uint32_t *q = gpu(ch, at, size, 0);
    if (!q || run_qmd(ch, v, at, q)) return -1;
    if (!field(v, q, NVHCQ_QMD_DEPENDENT_QMD0_ENABLE) ||
        field(v, q, NVHCQ_QMD_DEPENDENT_QMD0_ACTION) != NVHCQ_QMD_DEPENDENT_ACTION_SCHEDULE)
      return 0;
    at = field(v, q, NVHCQ_QMD_DEPENDENT_QMD0_POINTER) << 8;
  }
  return fault(ch, MOCK_XID_GR, at, "dependent QMD chain longer than %u", MAX_CHAIN, 0);
}

/* PCAS actions that schedule the QMD: SCHEDULE (2), INVALIDATE_COPY_SCHEDULE (3) and the
 * prefetching forms 9-11; PREFETCH (8) alone only reads it, INVALIDATE (1) and NOP (0) neither. */
static int pcas_schedules(uint32_t action) {
  return action == 2 || action == 3 || (action >= 9 && action <= 11);
}

/* ---- dispatch ---- */

static int is_compute(uint32_t c) {
  return (c & 0xff) == 0xc0;
}

static int engine_method(mock_channel *ch, unsigned subc, unsigned method, uint32_t value) {
  uint32_t hclass = ch->subc[subc];
  if (!hclass)
    return fault(ch, MOCK_XID_PBDMA, 0, "method 0x%03x on unbound subchannel %u", method, subc);
  int compute = is_compute(hclass);
  if (!nvhcq_method_name(compute ? NVHCQ_SUBC_COMPUTE : NVHCQ_SUBC_COPY, method))
    return fault(ch, compute ? MOCK_XID_GR : MOCK_XID_PBDMA, 0,
                 "unknown method 0x%03x on subchannel %u", method, subc);
  (compute ? ch->compute : ch->copy)[method / 4] = value;
  if (compute && method == NVC6C0_SEND_SIGNALING_PCAS2_B)
    return pcas_schedules(value) ? launch(ch, hclass) : 0;
  if (!compute && method == NVC6B5_LAUNCH_DMA) return launch_dma(ch, value);
  return 0;
}

static int method(mock_channel *ch, unsigned subc, unsigned m, uint32_t value) {
  return m < 0x100 ? host_method(ch, subc, m, value) : engine_method(ch, subc, m, value);
}

/* One pushbuffer segment: method headers and their data. */
static int run_segment(mock_channel *ch, const uint32_t *w, uint32_t n, uint64_t va) {
  for (uint32_t i = 0; i < n;) {
    uint32_t h = w[i++];
    unsigned op = h >> 29, count = (h >> 16) & 0x1fff, subc = (h >> 13) & 7, m = (h & 0xfff) << 2;
    if (op == NVHCQ_SEC_OP_IMMD_DATA_METHOD) {
      if (method(ch, subc, m, count)) return -1;
      continue;
    }
    if (op != NVHCQ_SEC_OP_INC_METHOD && op != NVHCQ_SEC_OP_NON_INC_METHOD &&
        op != NVHCQ_SEC_OP_ONE_INC)
      return fault(ch, MOCK_XID_PBDMA, va + 4ull * (i - 1), "bad method header 0x%08x", h, 0);
    if (count > n - i)
      return fault(ch, MOCK_XID_PBDMA, va + 4ull * (i - 1), "method 0x%03x: %u words past the end",
                   m, count - (n - i));
    for (unsigned k = 0; k < count; k++, i++) {
      unsigned at = op == NVHCQ_SEC_OP_INC_METHOD         ? m + 4 * k
                    : op == NVHCQ_SEC_OP_ONE_INC && k > 0 ? m + 4
                                                          : m;
      if (method(ch, subc, at & 0x3ffc, w[i])) return -1;
    }
  }
  return 0;
}

static int run_entry(mock_channel *ch, uint64_t entry) {
  uint64_t va = entry & 0xfffffffffcull;
  uint32_t n = (uint32_t)(entry >> 42) & NVHCQ_GPFIFO_MAX_WORDS;
  if (!n) return 0;
  const uint32_t *w = gpu(ch, va, 4ull * n, 0);
  return w ? run_segment(ch, w, n, va) : -1;
}

/* ---- doorbells ---- */

/* Guards the channels' doorbell pointers: the page they point into may be freed. Not the mock's
 * lock, which is held while a channel's thread is joined. */
static pthread_mutex_t doorbell_lock = PTHREAD_MUTEX_INITIALIZER;

/* The token in the channel's doorbell word, 0 if it has none; `wipe` clears the word after. */
static uint32_t doorbell_word(mock_channel *ch, int wipe) {
  pthread_mutex_lock(&doorbell_lock);
  uint32_t *bell = ch->doorbell, v = bell ? __atomic_load_n(bell, __ATOMIC_ACQUIRE) : 0;
  if (bell && wipe) __atomic_store_n(bell, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&doorbell_lock);
  return v;
}

/* nvhcq rings right after it writes GP_PUT: that ring is the one lost. It is waited for (up to
 * 100 ms: another channel's ring may have overwritten it) and wiped, so that the token seen in
 * the word later is the doorbell rung again. */
static void lose_doorbell(mock_channel *ch, uint32_t put) {
  ch->lost = 1;
  ch->lost_put = put;
  uint64_t until = mock_now_ns() + 100000000ull;
  while (doorbell_word(ch, 0) != ch->token && mock_now_ns() < until &&
         !__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE))
    sleep_ns(10000);
  doorbell_word(ch, 1);
  fprintf(stderr, "nvhcq mock: channel %u lost the doorbell of GP_PUT %u\n", ch->token, put);
}

/* Whether the channel takes up entries up to `put`. The mock reads GP_PUT without waiting for a
 * doorbell, except where the injection lost one (until a later GP_PUT or the doorbell rung again)
 * or made the channel deaf. A doorbell is a GP_PUT the channel has not seen before. */
static int doorbell_heard(mock_channel *ch, uint32_t put) {
  if (ch->stuck) return 0;
  if (ch->lost) {
    int rung = doorbell_word(ch, 0) == ch->token;
    if (!rung && put == ch->lost_put) return 0;
    ch->lost = 0;
    ch->seen_put = put;
    mock_inject_resumed(rung);
    fprintf(stderr, "nvhcq mock: channel %u goes on (%s)\n", ch->token,
            rung ? "its doorbell was rung again" : "a later submission moved GP_PUT");
    return 1;
  }
  if (put == ch->seen_put) return 1;
  ch->seen_put = put;
  int inject = mock_inject_doorbell();
  if (inject == MOCK_INJECT_DOORBELL_STUCK) {
    ch->stuck = 1;
    fprintf(stderr, "nvhcq mock: channel %u no longer hears its doorbell\n", ch->token);
  }
  if (inject == MOCK_INJECT_DOORBELL) lose_doorbell(ch, put);
  return inject == MOCK_INJECT_NONE;
}

void mock_channel_drop_doorbell(mock_channel *ch, const uint8_t *page, uint64_t size) {
  pthread_mutex_lock(&doorbell_lock);
  if ((const uint8_t *)ch->doorbell >= page && (const uint8_t *)ch->doorbell < page + size)
    ch->doorbell = NULL;
  pthread_mutex_unlock(&doorbell_lock);
}

void mock_doorbells_clear(void) {
  pthread_mutex_lock(&nvhcq_mock.lock);
  for (uint32_t i = 0; i < nvhcq_mock.nobjs; i++) {
    mock_obj *o = nvhcq_mock.objs[i];
    if (o->hclass == mock_gpu->usermode && o->backing)
      __atomic_store_n((uint32_t *)(o->backing + NVHCQ_USERMODE_NOTIFY_CHANNEL_PENDING), 0,
                       __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&nvhcq_mock.lock);
}

/* ---- the channel's thread ---- */

static void *channel_main(void *arg) {
  mock_channel *ch = arg;
  mock_thread_space = ch->space;
  mock_on_engine = 1;
  unsigned idle = 0;
  while (!__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE)) {
    uint32_t get = __atomic_load_n(&ch->userd[GP_GET_IDX], __ATOMIC_ACQUIRE);
    uint32_t put = __atomic_load_n(&ch->userd[GP_PUT_IDX], __ATOMIC_ACQUIRE);
    if (get == put || put >= ch->entries || __atomic_load_n(&ch->faulted, __ATOMIC_ACQUIRE) ||
        !doorbell_heard(ch, put)) {
      if (idle++ < 64)
        sched_yield();
      else
        sleep_ns(idle < 4096 ? 10000 : 200000);
      continue;
    }
    idle = 0;
    uint64_t entry = __atomic_load_n(&ch->ring[get], __ATOMIC_ACQUIRE);
    if (run_entry(ch, entry)) continue;
    __atomic_store_n(&ch->userd[GP_GET_IDX], (get + 1) % ch->entries, __ATOMIC_RELEASE);
  }
  return NULL;
}

/* ---- lifetime ---- */

/* The doorbell word of the usermode object in the channel's client, if it made one. */
static uint32_t *client_doorbell(const mock_obj *channel) {
  for (uint32_t i = 0; i < nvhcq_mock.nobjs; i++) {
    mock_obj *o = nvhcq_mock.objs[i];
    if (o->client == channel->client && o->hclass == mock_gpu->usermode && o->backing)
      return (uint32_t *)(o->backing + NVHCQ_USERMODE_NOTIFY_CHANNEL_PENDING);
  }
  return NULL;
}

uint32_t mock_channel_create(mock_obj *obj, const NV_CHANNEL_ALLOC_PARAMS *p, uint32_t token,
                             int space, int uvm) {
  mock_obj *err = mock_find(obj->client, p->hObjectError);
  mock_obj *userd = mock_find(obj->client, p->hUserdMemory[0]);
  if (!err || !err->backing || err->size < 16 || !userd || !userd->backing)
    return MOCK_ERR_INVALID_OBJECT_HANDLE;
  if (!p->gpFifoEntries || (p->gpFifoEntries & (p->gpFifoEntries - 1)))
    return MOCK_ERR_INVALID_ARGUMENT;
  if (p->userdOffset[0] + 0x200 > userd->size) return MOCK_ERR_INVALID_LIMIT;
  uint64_t *ring = mock_space_pointer(space, p->gpFifoOffset, p->gpFifoEntries * 8ull);
  if (!ring) return MOCK_ERR_INVALID_ADDRESS;
  mock_channel *ch = calloc(1, sizeof *ch);
  if (!ch) return MOCK_ERR_NO_MEMORY;
  ch->ring = ring;
  ch->space = space;
  ch->uvm = uvm;
  ch->entries = p->gpFifoEntries;
  ch->userd = (uint32_t *)(userd->backing + p->userdOffset[0]);
  ch->notifier = err->backing;
  ch->token = token;
  ch->engine_type = p->engineType; /* else the engine object's (mock_channel_add_engine) */
  ch->doorbell = client_doorbell(obj);
  if (pthread_create(&ch->thread, NULL, channel_main, ch)) {
    free(ch);
    return MOCK_ERR_NO_MEMORY;
  }
  ch->started = 1;
  obj->ch = ch;
  nvhcq_mock.channels++;
  return MOCK_NV_OK;
}

void mock_channel_add_engine(mock_channel *ch, uint32_t hclass) {
  /* A channel the client named no engine for runs on its engine object's: the graphics engine,
   * or for a copy object the copy engine that works with it (CE0). */
  uint32_t engine = is_compute(hclass) ? NV2080_ENGINE_TYPE_GRAPHICS : NV2080_ENGINE_TYPE_COPY(0);
  uint32_t none = 0;
  __atomic_compare_exchange_n(&ch->engine_type, &none, engine, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  for (int i = 0; i < 4; i++)
    if (!ch->engines[i]) {
      __atomic_store_n(&ch->engines[i], hclass, __ATOMIC_RELEASE);
      return;
    }
}

uint32_t mock_channel_token(const mock_channel *ch) {
  return ch->token;
}

int mock_channel_space(const mock_channel *ch) {
  return ch->space;
}

void mock_channel_stop(mock_channel *ch) {
  __atomic_store_n(&ch->stop, 1, __ATOMIC_RELEASE);
  if (ch->started) pthread_join(ch->thread, NULL);
  ch->started = 0;
}

void mock_channel_destroy(mock_channel *ch) {
  mock_channel_stop(ch);
  nvhcq_mock.channels--;
  free(ch);
}

/* ---- the grid runner ---- */

static nvhcq_mock_grid_fn grid_hook = mock_run_ptx_grid;

void nvhcq_mock_set_grid_hook(nvhcq_mock_grid_fn fn) {
  __atomic_store_n(&grid_hook, fn ? fn : mock_run_ptx_grid, __ATOMIC_RELEASE);
}

int nvhcq_mock_run_grid(const nvhcq_mock_grid *g) {
  return __atomic_load_n(&grid_hook, __ATOMIC_ACQUIRE)(g);
}
