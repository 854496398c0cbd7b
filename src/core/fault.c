/* What stopped a channel, in words. UVM reports the MMU faults it handles (those of kernels in our
 * fault-capable address space) into an event ring within a millisecond. The driver writes the
 * channel's error notifier when it has stopped a channel (robust-channel recovery, 50-150 ms
 * later); for faults of the SMs it also saves their error registers and the MMU fault record,
 * which a debugger object of our own client may read. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/fault.h"

#include "abi/rm.h"
#include "core/device.h"
#include "driver/door.h"

/* Error notifier slot 0: time (upper word first), info32 = Xid, info16 = engine type, and
 * status = 0xffff, written last. */
#define NOTIFIER_XID    8
#define NOTIFIER_ENGINE 12
#define NOTIFIER_STATUS 14

/* Exception events the debugger object asks for: none. Events for fatal exceptions would make the
 * driver defer recovery until a debugger resumes the SMs, and nothing would. */
#define DEBUGGER_EXCEPTION_MASK 0u

void nvhcq_fault_init(nvhcq_device *dev) {
  pthread_mutex_init(&dev->fault.lock, NULL);
  dev->fault.tools_fd = -1;
}

void nvhcq_fault_fini(nvhcq_device *dev) {
  nvhcq_fault_watch_close(dev);
  pthread_mutex_destroy(&dev->fault.lock);
}

/* Every submission names its last kernel; copying the name each time cost about as much as the
 * rest of the submission's bookkeeping, so only a different name is copied (module unloads
 * forget the source, whose memory may then hold another name). */
void nvhcq_fault_note_kernel(nvhcq_device *dev, const char *kernel) {
  if (kernel == dev->fault.last_kernel_from) return;
  size_t n = strnlen(kernel, sizeof dev->fault.last_kernel - 1);
  memcpy(dev->fault.last_kernel, kernel, n);
  dev->fault.last_kernel[n] = '\0';
  dev->fault.last_kernel_from = kernel;
}

void nvhcq_fault_forget_kernel_names(nvhcq_device *dev) {
  dev->fault.last_kernel_from = NULL;
}

void nvhcq_fault_reset(nvhcq_device *dev) {
  nvhcq_fault_watch_reset(dev);
  dev->fault.text[0] = '\0';
}

uint32_t nvhcq_fault_debugger(nvhcq_rm *rm, uint32_t h_device, uint32_t engine) {
  NV83DE_ALLOC_PARAMETERS p = {.hAppClient = rm->root, .hClass3dObject = engine};
  uint32_t h = 0;
  if (nvhcq_rm_alloc(rm, h_device, GT200_DEBUGGER, &p, sizeof p, &h)) return 0;
  NV83DE_CTRL_DEBUG_SET_EXCEPTION_MASK_PARAMS m = {DEBUGGER_EXCEPTION_MASK};
  if (!nvhcq_rm_control(rm, h, NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK, &m, sizeof m)) return h;
  nvhcq_rm_free(rm, h_device, h);
  return 0;
}

void nvhcq_fault_detach(nvhcq_device *dev) {
  if (dev->fault.h_debugger && !nvhcq_device_closing(dev))
    nvhcq_rm_free(&dev->rm, dev->h_device, dev->fault.h_debugger);
  dev->fault.h_debugger = 0;
}

/* ---- UVM's fault events ---- */

#define TOOLS_ENTRIES 256u

static uint64_t monotonic_raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nvhcq_fault_watch_open(nvhcq_device *dev) {
  dev->fault.tools_fd = nvhcq_door->open("/dev/nvidia-uvm-tools", O_RDWR);
  if (dev->fault.tools_fd < 0) return;
  size_t ring_bytes = TOOLS_ENTRIES * UVM_TOOLS_EVENT_ENTRY_BYTES;
  void *ring =
      mmap(NULL, ring_bytes + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ring == MAP_FAILED) {
    nvhcq_fault_watch_close(dev);
    return;
  }
  dev->fault.tools_ring = ring;
  dev->fault.tools_ctl = (volatile UVM_TOOLS_EVENT_CONTROL *)((uint8_t *)ring + ring_bytes);
  UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS t = {.queueBuffer = (uintptr_t)ring,
                                           .queueBufferSize = TOOLS_ENTRIES,
                                           .controlBuffer = (uintptr_t)dev->fault.tools_ctl,
                                           .uvmFd = dev->rm.fd_uvm};
  UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS e = {
      .eventTypeFlags = 1ull << UVM_EVENT_TYPE_GPU_FAULT | 1ull << UVM_EVENT_TYPE_FATAL_FAULT};
  if (nvhcq_door->ioctl(dev->fault.tools_fd, UVM_TOOLS_INIT_EVENT_TRACKER, &t) || t.rmStatus ||
      nvhcq_door->ioctl(dev->fault.tools_fd, UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS, &e) || e.rmStatus)
    nvhcq_fault_watch_close(dev);
}

void nvhcq_fault_watch_close(nvhcq_device *dev) {
  if (dev->fault.tools_fd >= 0) nvhcq_door->close(dev->fault.tools_fd);
  if (dev->fault.tools_ring)
    munmap(dev->fault.tools_ring, TOOLS_ENTRIES * UVM_TOOLS_EVENT_ENTRY_BYTES + 4096);
  dev->fault.tools_fd = -1;
  dev->fault.tools_ring = NULL;
  dev->fault.tools_ctl = NULL;
}

void nvhcq_fault_watch_reset(nvhcq_device *dev) {
  dev->fault.events_after_ns = monotonic_raw_ns();
  if (!dev->fault.tools_ctl) return;
  uint32_t put = __atomic_load_n(&dev->fault.tools_ctl->put_behind, __ATOMIC_ACQUIRE);
  dev->fault.tools_ctl->get_behind = dev->fault.tools_ctl->get_ahead = put;
}

/* The next fatal fault UVM reported for the current channels, if any. */
static int next_fatal_fault(nvhcq_device *dev, UVM_EVENT_FATAL_FAULT *out) {
  if (!dev->fault.tools_ctl) return 0;
  volatile UVM_TOOLS_EVENT_CONTROL *c = dev->fault.tools_ctl;
  uint32_t put = __atomic_load_n(&c->put_behind, __ATOMIC_ACQUIRE), get = c->get_behind;
  if (get == put) return 0; /* the common case, on every check of a wait */
  int found = 0;
  for (; get != put && !found; get = (get + 1) & (TOOLS_ENTRIES - 1)) {
    const uint8_t *e = dev->fault.tools_ring + (size_t)get * UVM_TOOLS_EVENT_ENTRY_BYTES;
    if (e[0] == UVM_EVENT_TYPE_GPU_FAULT) {
      dev->fault.last_client = ((const UVM_EVENT_GPU_FAULT *)e)->clientType;
    } else if (e[0] == UVM_EVENT_TYPE_FATAL_FAULT) {
      memcpy(out, e, sizeof *out);
      found = out->timeStamp >= dev->fault.events_after_ns;
    }
  }
  c->get_behind = c->get_ahead = get;
  return found;
}

/* ---- words for codes ---- */

static const char *engine_name(uint32_t type, char *buf, size_t n) {
  if (type == 0x01) return "graphics/compute engine";
  if (type == 0x27) return "host interface (PBDMA)";
  if (type >= 0x09 && type <= 0x12) return snprintf(buf, n, "copy engine %u", type - 0x09), buf;
  if (type >= 0x34 && type <= 0x3d) return snprintf(buf, n, "copy engine %u", type - 0x2a), buf;
  return snprintf(buf, n, "engine type 0x%x", type), buf;
}

static const char *mmu_fault_type(uint32_t t) {
  static const char *const names[] = {
      "no page directory entry (unmapped address)",
      "page directory entry of the wrong size",
      "no page table entry (unmapped address)",
      "address beyond the address space",
      "unbound instance block",
      "privilege violation",
      "write to read-only memory",
      "read of write-only memory",
      "pitch mask violation",
      "work creation",
      "unsupported aperture",
      "compression failure or confidential-computing violation",
      "unsupported kind",
      "region violation",
      "poisoned memory",
      "atomic on memory that does not allow it",
  };
  return t < sizeof names / sizeof *names ? names[t] : "unknown fault type";
}

/* UVM numbers fault types its own way: the hardware's type for each. */
static const char *uvm_fault_type(uint32_t t) {
  static const uint8_t hardware[] = {0xff, 0, 2, 6, 15, 1, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 11};
  return mmu_fault_type(t < sizeof hardware ? hardware[t] : 0xff);
}

static const char *mmu_access(uint32_t a) {
  static const char *const names[] = {
      [0] = "read",        [1] = "write",         [2] = "atomic",         [3] = "prefetch",
      [4] = "weak atomic", [8] = "physical read", [9] = "physical write", [10] = "physical atomic",
  };
  return a < sizeof names / sizeof *names && names[a] ? names[a] : "unknown access";
}

/* UVM numbers accesses from 1 in the hardware's order (0 is "none"). */
static const char *uvm_access(uint32_t a) {
  return a ? mmu_access(a - 1) : "access";
}

/* The warp error code in bits 15:0 of the warp ESR. */
static const char *warp_error(uint32_t code) {
  static const char *const names[] = {
      [0x01] = "stack error",
      [0x02] = "API stack error",
      [0x04] = "PC wrap",
      [0x05] = "misaligned PC",
      [0x06] = "PC overflow",
      [0x08] = "misaligned register",
      [0x09] = "illegal instruction encoding (also what a trap such as __trap() gives)",
      [0x0b] = "illegal instruction parameter",
      [0x0d] = "out-of-range register",
      [0x0e] = "out-of-range address",
      [0x0f] = "misaligned address",
      [0x10] = "invalid address space",
      [0x12] = "invalid constant address",
      [0x16] = "stack overflow",
      [0x17] = "MMU fault",
      [0x18] = "texture format",
      [0x19] = "texture layout",
      [0x20] = "MMU NACK (access to an unmapped or invalid address)",
      [0x21] = "arrive error",
  };
  return code < sizeof names / sizeof *names && names[code] ? names[code] : "unknown warp error";
}

/* Global ESR bits that say what a warp did (trap and breakpoint), not what failed. */
static const char *global_error(uint32_t esr) {
  static const struct {
    uint32_t bit;
    const char *name;
  } bits[] = {
      /* In this order: the first set bit names the error. */
      {0x10, "trap instruction (BPT.TRAP, e.g. __trap() or a failed assert)"},
      {0x20, "breakpoint pause"},
      {0x100, "error inside a trap handler"},
      {0x40, "single step complete"},
  };
  for (size_t i = 0; i < sizeof bits / sizeof *bits; i++)
    if (esr & bits[i].bit) return bits[i].name;
  return NULL;
}

/* ---- reading what the driver saved ---- */

typedef struct text {
  char *buf;
  size_t cap, len;
} text;

static void add(text *t, const char *fmt, ...) {
  if (t->len >= t->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  if (n > 0) t->len = t->len + (size_t)n < t->cap ? t->len + (size_t)n : t->cap;
}

static void describe_pc(const nvhcq_device *dev, text *t, uint64_t pc) {
  const char *kernel;
  uint64_t offset;
  if (dev->fault.name_pc && dev->fault.name_pc(dev, pc, &kernel, &offset))
    add(t, " at PC 0x%llx (kernel %s + 0x%llx)", (unsigned long long)pc, kernel,
        (unsigned long long)offset);
  else
    add(t, " at PC 0x%llx", (unsigned long long)pc);
}

/* The first SM that recorded an error, and how many did. */
static void describe_sm_errors(nvhcq_device *dev, text *t) {
  static _Thread_local NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS p;
  NV83DE_SM_ERROR_STATE_REGISTERS first = {0};
  uint32_t first_sm = 0, count = 0, sms = dev->info.sm_count ? dev->info.sm_count : 1;
  for (uint32_t start = 0; start < sms; start += NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL) {
    memset(&p, 0, sizeof p);
    p.hTargetChannel = dev->compute.handle;
    p.startingSM = start;
    p.numSMsToRead = sms - start < NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL
                         ? sms - start
                         : NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL;
    if (nvhcq_rm_control(&dev->rm, dev->fault.h_debugger,
                         NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES, &p, sizeof p))
      return;
    for (uint32_t i = 0; i < p.numSMsToRead; i++) {
      const NV83DE_SM_ERROR_STATE_REGISTERS *r = &p.smErrorStateArray[i];
      if (!(r->hwwWarpEsr & 0xffff) && !global_error(r->hwwGlobalEsr)) continue;
      if (!count++) first = *r, first_sm = start + i;
    }
  }
  if (!count) return;
  uint32_t code = first.hwwWarpEsr & 0xffff;
  const char *global = global_error(first.hwwGlobalEsr);
  add(t, "; SM %u: %s", first_sm, code ? warp_error(code) : global);
  if (code) add(t, " (warp error 0x%x)", code);
  describe_pc(dev, t, first.hwwWarpEsrPc64);
  if (code && first.hwwEsrAddr) add(t, ", address 0x%llx", (unsigned long long)first.hwwEsrAddr);
  if (count > 1) add(t, "; %u SMs reported errors", count);
  if (nvhcq_trace_enabled())
    add(t, " [raw: global 0x%x warp 0x%x pc 0x%llx addr 0x%llx cga 0x%x]", first.hwwGlobalEsr,
        first.hwwWarpEsr, (unsigned long long)first.hwwWarpEsrPc64,
        (unsigned long long)first.hwwEsrAddr, first.hwwCgaEsr);
}

static void describe_mmu_fault(nvhcq_device *dev, text *t) {
  NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS p = {0};
  if (nvhcq_rm_control(&dev->rm, dev->fault.h_debugger, NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO,
                       &p, sizeof p) ||
      p.count == 0)
    return;
  const NV83DE_MMU_FAULT_INFO_ENTRY *e = &p.mmuFaultInfoList[0];
  add(t, "; MMU fault: %s at address 0x%llx, %s", mmu_access(e->accessType),
      (unsigned long long)e->faultAddress, mmu_fault_type(e->faultType));
  if (p.count > 1) add(t, " (%u faults recorded)", p.count);
}

/* The channel's own fault record: the one source for faults of the copy engine. */
static void describe_channel_fault(nvhcq_device *dev, const nvhcq_channel *ch, text *t) {
  NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS p;
  memset(&p, 0, sizeof p);
  if (nvhcq_rm_control(&dev->rm, ch->handle, NV906F_CTRL_CMD_GET_MMU_FAULT_INFO, &p, sizeof p))
    return;
  uint64_t address = (uint64_t)p.addrHi << 32 | p.addrLo;
  if (!address && !p.faultString[0]) return;
  p.faultString[sizeof p.faultString - 1] = 0;
  add(t, "; %s channel fault record: address 0x%llx, %s (type %u)", ch->name,
      (unsigned long long)address, p.faultString[0] ? p.faultString : "no description",
      p.faultType);
}

/* Channel c: 0 compute, 1 copy; 2 and 3 the same of those a move onto UVM left behind. */
static void describe(nvhcq_device *dev, int c, uint32_t xid, uint32_t engine, text *t) {
  char ebuf[32];
  add(t, "GPU %d: the driver stopped the %s channel%s: Xid %u, %s, on the %s", dev->index,
      c % 2 ? "copy" : "compute", c >= 2 ? " (of those before the move onto UVM)" : "", xid,
      nvhcq_xid_name(xid), engine_name(engine, ebuf, sizeof ebuf));
  size_t before = t->len;
  if (dev->fault.h_debugger) {
    describe_sm_errors(dev, t);
    describe_mmu_fault(dev, t);
  }
  const nvhcq_channel *ch = c == 0   ? &dev->compute
                            : c == 1 ? &dev->copy
                            : c == 2 ? &dev->retired.compute
                                     : &dev->retired.copy;
  if (t->len == before) describe_channel_fault(dev, ch, t);
  add(t,
      "%s. Work on this device can no longer complete: call nvhcq_device_recover (memory "
      "stays valid) or close the device",
      nvhcq_device_progress(dev));
}

static void describe_uvm_fault(nvhcq_device *dev, const UVM_EVENT_FATAL_FAULT *f, text *t) {
  add(t,
      "GPU %d: MMU fault in %s: %s at address 0x%llx (page), %s; the driver is stopping the "
      "channels",
      dev->index,
      dev->fault.last_client == 2 ? "a copy or the host interface" : "a kernel (the SMs)",
      uvm_access(f->accessType), (unsigned long long)f->address, uvm_fault_type(f->faultType));
  add(t,
      "%s. Work on this device can no longer complete: call nvhcq_device_recover (memory "
      "stays valid) or close the device",
      nvhcq_device_progress(dev));
}

const char *nvhcq_device_progress(const nvhcq_device *dev) {
  static _Thread_local char line[256];
  snprintf(
      line, sizeof line,
      "; last kernel submitted: %s; internal progress: compute %llu of %llu, copy %llu of %llu",
      dev->fault.last_kernel[0] ? dev->fault.last_kernel : "none",
      (unsigned long long)dev->timeline.signal[0]->cpu[0],
      (unsigned long long)dev->timeline.value[0],
      (unsigned long long)dev->timeline.signal[1]->cpu[0],
      (unsigned long long)dev->timeline.value[1]);
  return line;
}

const char *nvhcq_device_stall(nvhcq_device *dev) {
  static _Thread_local char line[640];
  text t = {line, sizeof line, 0};
  line[0] = '\0';
  for (int c = 0; c < 2; c++) {
    const nvhcq_channel *ch = c ? &dev->copy : &dev->compute;
    if (!ch->handle || !ch->gp_get || !ch->entries) continue;
    uint32_t get = __atomic_load_n(ch->gp_get, __ATOMIC_ACQUIRE) % ch->entries;
    uint32_t put = __atomic_load_n(ch->gp_put, __ATOMIC_ACQUIRE) % ch->entries;
    if (get == put) continue;
    uint32_t pending = (put + ch->entries - get) % ch->entries;
    uint32_t rung = __atomic_load_n(&ch->rung_again, __ATOMIC_RELAXED);
    add(&t,
        "; GPU %d's %s channel (the %s queues' work) has %u submitted entr%s it has not fetched "
        "(GP_GET %u, GP_PUT %u), its doorbell rung again %u time%s: unless earlier work there "
        "still runs or waits, the GPU is not running this channel (a doorbell it lost, or a "
        "channel it no longer schedules) and a longer NVHCQ_TIMEOUT_MS will not help",
        dev->index, ch->name, ch->name, pending, pending == 1 ? "y" : "ies", get, put, rung,
        rung == 1 ? "" : "s");
  }
  return line;
}

static int stopped(const nvhcq_buffer *notifier) {
  return *(const volatile uint16_t *)((const char *)notifier->host_pointer + NOTIFIER_STATUS) != 0;
}

int nvhcq_fault_channel_stopped(const nvhcq_device *dev, int copy) {
  return dev->notifiers[copy] && stopped(dev->notifiers[copy]);
}

/* A device-side assertion is the cause the user needs: it goes first, the driver's record after. */
static void explain(nvhcq_device *dev, text *t) {
  char why[512];
  why[0] = '\0';
  if (dev->fault.explain) dev->fault.explain(dev, why, sizeof why);
  size_t n = strlen(why);
  if (!n || n + 2 >= t->cap) return;
  size_t keep = t->len + n + 2 < t->cap ? t->len : t->cap - n - 3;
  memmove(t->buf + n + 2, t->buf, keep);
  memcpy(t->buf, why, n);
  memcpy(t->buf + n, "; ", 2);
  t->len = n + 2 + keep;
  t->buf[t->len] = '\0';
}

/* Writes what stopped the channels into dev->fault.text, if anything did and it is not there yet;
 * 1 if the device has faulted. */
static int read_fault(nvhcq_device *dev) {
  if (dev->fault.text[0]) return 1;
  text t = {dev->fault.text, sizeof dev->fault.text, 0};
  UVM_EVENT_FATAL_FAULT f;
  if (next_fatal_fault(dev, &f)) {
    describe_uvm_fault(dev, &f, &t);
  } else {
    for (int c = 0; c < 4 && !t.len; c++) {
      /* Channels a move onto UVM left behind may still fault on work they had (2 and 3). */
      nvhcq_buffer *const *notifiers = c < 2 ? dev->notifiers : dev->retired.notifiers;
      if (!notifiers[c % 2] || !stopped(notifiers[c % 2])) continue;
      const volatile uint8_t *n = notifiers[c % 2]->host_pointer;
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      describe(dev, c, *(const volatile uint32_t *)(n + NOTIFIER_XID),
               *(const volatile uint16_t *)(n + NOTIFIER_ENGINE), &t);
    }
  }
  if (!t.len) return 0;
  dev->broken = 1;
  explain(dev, &t);
  return 1;
}

nvhcq_status nvhcq_device_check_faults(nvhcq_device *dev) {
  /* Signal waits may run on any thread: one of them reads the event ring and the records. */
  pthread_mutex_lock(&dev->fault.lock);
  nvhcq_status s =
      read_fault(dev) ? nvhcq_fail(NVHCQ_ERROR_GPU_FAULT, "%s", dev->fault.text) : NVHCQ_SUCCESS;
  pthread_mutex_unlock(&dev->fault.lock);
  return s;
}
