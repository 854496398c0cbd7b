/* Unit tests that need no GPU: encodings, allocators, parsing, messages, and device opening
 * against a mock driver behind the kernel door. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "channel.h"
#include "device.h"
#include "door.h"
#include "handle.h"
#include "push.h"
#include "qmd.h"
#include "rm.h"
#include "test.h"
#include "va.h"

static void t_method_header(void) {
  /* SEC_OP 1 (incrementing), count 5, subchannel 0, SEM_ADDR_LO (0x5c) */
  TEST_CHECK(nvhcq_method_header(NVHCQ_SEC_OP_INC_METHOD, 0, NVC56F_SEM_ADDR_LO, 5) == 0x20050017u);
  TEST_CHECK(nvhcq_method_header(NVHCQ_SEC_OP_INC_METHOD, 4, NVC6B5_LAUNCH_DMA, 1) == 0x200180c0u);
  TEST_CHECK(nvhcq_method_header(NVHCQ_SEC_OP_INC_METHOD, 1, NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI,
                                 1) == 0x200125a6u);
}

static void t_push_encoding_and_print(void) {
  nvhcq_push p;
  nvhcq_push_init(&p);
  nvhcq_push_host_signal(&p, 0x123456789abcull, 0x1122334455667788ull);
  TEST_CHECK(p.len == 6); /* no non-stall interrupt: nothing waits on interrupts */
  TEST_CHECK(p.words[0] == 0x20050017u);
  TEST_CHECK(p.words[1] == 0x56789abcu && p.words[2] == 0x1234u);
  TEST_CHECK(p.words[3] == 0x55667788u && p.words[4] == 0x11223344u);
  TEST_CHECK(p.words[5] == (1u | 1u << 20 | 1u << 24 | 1u << 25));
  nvhcq_push_copy(&p, 0x2000, 0x1000, (5ull << 30) + 7); /* three pieces: 2 + 2 + 1 GiB+7 */
  uint32_t launches = 0, last_len = 0;
  for (uint32_t i = 6; i < p.len; i++) {
    if (p.words[i] == nvhcq_method_header(1, 4, NVC6B5_LAUNCH_DMA, 1)) launches++;
    if (p.words[i] == nvhcq_method_header(1, 4, NVC6B5_LINE_LENGTH_IN, 1))
      last_len = p.words[i + 1];
  }
  TEST_CHECK(launches == 3);
  TEST_CHECK(last_len == (1u << 30) + 7);
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  nvhcq_push_print(f, p.words, p.len);
  fclose(f);
  TEST_CHECK(strstr(text, "SEM_EXECUTE") && strstr(text, "LAUNCH_DMA") &&
             strstr(text, "LINE_LENGTH_IN"));
  free(text);
  nvhcq_push_finish(&p);
}

/* Two QMDs at fake GPU addresses, the second chained to the first: what the decoder reads. */
static uint32_t decode_qmds[2][96];
static const uint32_t *decode_qmd_at(void *user, uint64_t gpu) {
  (void)user;
  return gpu == 0x100000 ? decode_qmds[0] : gpu == 0x200000 ? decode_qmds[1] : NULL;
}

/* NVHCQ_TRACE=2's decoder on a known pushbuffer: every method nvhcq sends named (no "?"), and
 * each launched QMD field by field, the chained one too. */
static void t_push_decode(void) {
  nvhcq_qmd_version v = NVHCQ_QMD_V04;
  memset(decode_qmds, 0, sizeof decode_qmds);
  for (int i = 0; i < 2; i++) {
    uint32_t *q = decode_qmds[i];
    TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_MAJOR_VERSION, 4) == 0);
    TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_GRID_WIDTH, 1000u + (unsigned)i) == 0);
    TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_CTA_THREAD_DIMENSION0, 128) == 0);
    TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_REGISTER_COUNT, 32) == 0);
  }
  TEST_CHECK(nvhcq_qmd_set_dependent(v, decode_qmds[0], 0x200000) == 0);
  nvhcq_push p;
  nvhcq_push_init(&p);
  nvhcq_push_method1(&p, NVHCQ_SUBC_HOST, NVC56F_WFI, 0);
  nvhcq_push_method1(&p, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_PCAS_A, 0x100000 >> 8);
  nvhcq_push_method1(&p, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_SIGNALING_PCAS2_B,
                     NVC6C0_SEND_SIGNALING_PCAS2_B_PREFETCH_SCHEDULE);
  nvhcq_push_invalidate_shader_caches(&p);
  nvhcq_push_host_signal(&p, 0x123456789abcull, 7);
  nvhcq_push_copy(&p, 0x2000, 0x1000, 4096);
  nvhcq_push_copy_signal(&p, 0x3000, 9, 1);
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  nvhcq_push_decode_ctx ctx = {v, decode_qmd_at, NULL};
  nvhcq_push_decode(f, p.words, p.len, &ctx);
  fclose(f);
  TEST_CHECK_MSG(!strstr(text, "] ?"), "an unnamed method:\n%s", text);
  static const char *const want[] = {"WFI",
                                     "SEND_PCAS_A",
                                     "SEND_SIGNALING_PCAS2_B",
                                     "INVALIDATE_SHADER_CACHES_NO_WFI",
                                     "SEM_ADDR_LO",
                                     "SEM_EXECUTE",
                                     "OFFSET_IN_UPPER",
                                     "LINE_LENGTH_IN",
                                     "LAUNCH_DMA",
                                     "SET_SEMAPHORE_A",
                                     "QMD at 0x100000:",
                                     "QMD at 0x200000 (chained):",
                                     "GRID_WIDTH=0x3e8",
                                     "GRID_WIDTH=0x3e9",
                                     "CTA_THREAD_DIMENSION0=0x80",
                                     "REGISTER_COUNT=0x20",
                                     "DEPENDENT_QMD0_ENABLE=0x1",
                                     "DEPENDENT_QMD0_POINTER=0x2000"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    TEST_CHECK_MSG(strstr(text, want[i]), "no \"%s\" in:\n%s", want[i], text);
  free(text);
  nvhcq_push_finish(&p);
}

static void t_va_allocator(void) {
  nvhcq_va va;
  TEST_CHECK(nvhcq_va_init(&va, 0x10000, 0x100000) == NVHCQ_SUCCESS);
  uint64_t a, b, c, d;
  TEST_CHECK(nvhcq_va_alloc(&va, 0x1000, 0x1000, &a) == NVHCQ_SUCCESS && a == 0x10000);
  TEST_CHECK(nvhcq_va_alloc(&va, 0x3000, 0x10000, &b) == NVHCQ_SUCCESS && b == 0x20000);
  TEST_CHECK(nvhcq_va_alloc(&va, 0x1000, 0x1000, &c) == NVHCQ_SUCCESS &&
             c == 0x11000); /* gap reused */
  TEST_CHECK(nvhcq_va_alloc(&va, 0x200000, 0x1000, &d) == NVHCQ_ERROR_OUT_OF_MEMORY);
  TEST_CHECK(nvhcq_va_alloc(&va, 0x1000, 3, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_va_free(&va, b, 0x3000) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_va_free(&va, b, 0x3000) == NVHCQ_ERROR_INVALID_ARGUMENT); /* double free */
  TEST_CHECK(strstr(nvhcq_last_error(), "already free") != NULL);
  TEST_CHECK(nvhcq_va_free(&va, a, 0x1000) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_va_free(&va, c, 0x1000) == NVHCQ_SUCCESS);
  TEST_CHECK(va.count == 1 && nvhcq_va_free_bytes(&va) == 0x100000); /* fully coalesced */
  TEST_CHECK(nvhcq_va_free(&va, 0x5000000, 0x1000) == NVHCQ_ERROR_INVALID_ARGUMENT);
  /* Many allocations, freed in a scattered order, leave one range. */
  uint64_t addrs[200];
  for (int i = 0; i < 200; i++)
    TEST_CHECK(nvhcq_va_alloc(&va, 0x1000, 0x1000, &addrs[i]) == NVHCQ_SUCCESS);
  for (int i = 0; i < 200; i += 2)
    TEST_CHECK(nvhcq_va_free(&va, addrs[i], 0x1000) == NVHCQ_SUCCESS);
  for (int i = 1; i < 200; i += 2)
    TEST_CHECK(nvhcq_va_free(&va, addrs[i], 0x1000) == NVHCQ_SUCCESS);
  TEST_CHECK(va.count == 1);
  nvhcq_va_finish(&va);
}

static void t_visible_devices(void) {
  int out[8];
  const char *uuids[3] = {"GPU-aaaa-1", "GPU-bbbb-2", "GPU-cccc-3"};
  TEST_CHECK(nvhcq_parse_visible("", 3, uuids, out, 8) == 0);
  TEST_CHECK(nvhcq_parse_visible("-1", 3, uuids, out, 8) == 0);
  TEST_CHECK(nvhcq_parse_visible("2,0", 3, uuids, out, 8) == 2 && out[0] == 2 && out[1] == 0);
  TEST_CHECK(nvhcq_parse_visible("1,7,0", 3, uuids, out, 8) == 1 && out[0] == 1); /* ends at 7 */
  TEST_CHECK(nvhcq_parse_visible("0,0", 3, uuids, out, 8) == 1);
  TEST_CHECK(nvhcq_parse_visible("GPU-bbbb", 3, uuids, out, 8) == 1 && out[0] == 1);
  TEST_CHECK(nvhcq_parse_visible("1x", 3, uuids, out, 8) == 0);
  TEST_CHECK(nvhcq_parse_visible(" 1, 2", 3, uuids, out, 8) == 2 && out[1] == 2);
}

static void t_branches(void) {
  TEST_CHECK(nvhcq_branch_for_version("580.159.04")->major == 580);
  TEST_CHECK(nvhcq_branch_for_version("570.133.20")->vaspace_params_size == 48);
  TEST_CHECK(nvhcq_branch_for_version("590.48.01")->uvm_free_size == 16);
  TEST_CHECK(nvhcq_branch_for_version("595.45.04")->name_string_size == 68);
  TEST_CHECK(nvhcq_branch_for_version("535.1.2") == NULL);
  TEST_CHECK(nvhcq_branch_for_version("garbage") == NULL);
}

static void t_trace_format_and_status(void) {
  char line[256];
  nvhcq_trace_format(line, sizeof line, "RM_ALLOC", "HOPPER_COMPUTE_A (0xcbc0) under 0xcaf00001",
                     0x51, 12.5);
  TEST_CHECK_MSG(strstr(line, "RM_ALLOC") && strstr(line, "HOPPER_COMPUTE_A") &&
                     strstr(line, "NV_ERR_NO_MEMORY (0x51)") && strstr(line, "12.5 us"),
                 "%s", line);
  TEST_CHECK(strcmp(nvhcq_nv_status_name(0), "NV_OK") == 0);
  TEST_CHECK(strcmp(nvhcq_nv_status_name(0x1f), "NV_ERR_INVALID_ARGUMENT") == 0);
  TEST_CHECK(nvhcq_status_from_nv(0x51) == NVHCQ_ERROR_OUT_OF_MEMORY);
  TEST_CHECK(nvhcq_status_from_nv(0x1f) == NVHCQ_ERROR_DRIVER);
  TEST_CHECK(strcmp(nvhcq_class_name(0xcbc0), "HOPPER_COMPUTE_A") == 0);
  TEST_CHECK(strcmp(nvhcq_status_name(NVHCQ_ERROR_TIMEOUT), "NVHCQ_ERROR_TIMEOUT") == 0);
}

static void t_ring_arithmetic(void) {
  TEST_CHECK(nvhcq_channel_fetched(0, 16, 0) == 0);
  TEST_CHECK(nvhcq_channel_fetched(5, 16, 5) == 5);
  TEST_CHECK(nvhcq_channel_fetched(5, 16, 2) == 2);
  TEST_CHECK(nvhcq_channel_fetched(20, 16, 1) == 17); /* wrapped: slot 4 is next, 3 pending */
  TEST_CHECK(nvhcq_channel_fetched(20, 16, 4) == 20);
}

/* ---- a mock driver: enough of the door to reach the branch check ---- */

static const char *mock_version = "999.1.2";
static int mock_open(const char *path, int flags) {
  (void)flags;
  if (strstr(path, "nvidiactl") || strstr(path, "nvidia-uvm") || strstr(path, "/dev/nvidia0"))
    return 100;
  errno = ENOENT;
  return -1;
}
static int mock_open_none(const char *path, int flags) {
  (void)path, (void)flags;
  errno = ENOENT;
  return -1;
}
static int mock_close(int fd) {
  return fd == 100 ? 0 : -1;
}
static int mock_ioctl(int fd, unsigned long request, void *arg) {
  (void)fd;
  unsigned nr = request & 0xff;
  if (nr == NV_ESC_CARD_INFO) {
    nv_ioctl_card_info_t *cards = arg;
    cards[0].valid = 1;
    cards[0].minor_number = 0;
  } else if (nr == NV_ESC_RM_ALLOC) {
    ((NVOS21_PARAMETERS *)arg)->hObjectNew = 0xc1d00001;
  } else if (nr == NV_ESC_RM_CONTROL) {
    NVOS54_PARAMETERS *p = arg;
    if (p->cmd == NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2)
      strcpy(((NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS *)(uintptr_t)p->params)
                 ->driverVersionBuffer,
             mock_version);
  }
  return 0;
}
static ssize_t mock_read_text(const char *path, char *buf, size_t size) {
  (void)path, (void)size;
  buf[0] = '\0';
  return -1;
}

static void t_mock_no_driver(void) {
  nvhcq_door_ops ops = {mock_open_none, mock_close,     mock_ioctl, mmap,
                        munmap,         mock_read_text, NULL,       NULL};
  nvhcq_door_set_ops(&ops);
  int count = -1;
  nvhcq_device *dev = (nvhcq_device *)1;
  TEST_CHECK(nvhcq_device_count(&count) == NVHCQ_ERROR_NO_DRIVER && count == 0);
  TEST_CHECK(nvhcq_device_open(0, &dev) == NVHCQ_ERROR_NO_DRIVER && dev == NULL);
  TEST_CHECK(strstr(nvhcq_last_error(), "/dev/nvidiactl") != NULL);
  nvhcq_door_set_ops(NULL);
}

static void t_mock_unknown_branch(void) {
  nvhcq_door_ops ops = {mock_open, mock_close,     mock_ioctl, mmap,
                        munmap,    mock_read_text, NULL,       NULL};
  nvhcq_door_set_ops(&ops);
  nvhcq_device *dev = NULL;
  nvhcq_status s = nvhcq_device_open(0, &dev);
  TEST_CHECK(s == NVHCQ_ERROR_UNSUPPORTED && dev == NULL);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "999.1.2") &&
                     strstr(nvhcq_last_error(), "570, 580, 590, 595"),
                 "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_device_open(5, &dev) == NVHCQ_ERROR_NO_DEVICE);
  TEST_CHECK(strstr(nvhcq_last_error(), "there is no GPU 5") != NULL);
  nvhcq_door_set_ops(NULL);
}

static void t_null_handles(void) {
  TEST_CHECK(nvhcq_device_close(NULL) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_destroy(NULL) == NVHCQ_SUCCESS);
  nvhcq_buffer *b;
  TEST_CHECK(nvhcq_buffer_create(NULL, 16, NVHCQ_MEMORY_DEVICE, &b) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_open(0, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_signal_cpu_wait(NULL, 1, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_submit(NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
}

/* The accessors that return a value, not a status: 0 or NULL and a message for a NULL, foreign or
 * dead handle, never a crash. */
static void t_null_accessors(void) {
  int not_ours[16] = {0};
  for (int round = 0; round < 2; round++) {
    void *h = round ? (void *)not_ours : NULL;
    const char *says = round ? "not made by nvhcq" : "is NULL";
    nvhcq_clear_error();
    TEST_CHECK(nvhcq_buffer_gpu_address(h) == 0);
    TEST_CHECK_MSG(strstr(nvhcq_last_error(), says), "%s", nvhcq_last_error());
    TEST_CHECK(nvhcq_buffer_host_pointer(h) == NULL);
    TEST_CHECK(nvhcq_buffer_size(h) == 0);
    nvhcq_clear_error();
    TEST_CHECK(nvhcq_signal_value(h) == 0);
    TEST_CHECK_MSG(strstr(nvhcq_last_error(), "signal"), "%s", nvhcq_last_error());
    TEST_CHECK(nvhcq_signal_timestamp_ns(h) == 0);
    TEST_CHECK(nvhcq_signal_gpu_address(h) == 0);
    nvhcq_signal_set(h, 5);
    TEST_CHECK(not_ours[0] == 0 && not_ours[2] == 0);
    nvhcq_clear_error();
    TEST_CHECK(nvhcq_module_kernel_count(h) == 0);
    TEST_CHECK_MSG(strstr(nvhcq_last_error(), "module"), "%s", nvhcq_last_error());
    TEST_CHECK(nvhcq_module_kernel_name(h, 0) == NULL);
  }
  /* A live signal reads; once destroyed (marked dead), it reads 0 and says so. */
  static uint64_t slot[2] = {7, 99};
  nvhcq_signal *sig = calloc(1, sizeof *sig);
  *sig = (nvhcq_signal){.magic = NVHCQ_SIGNAL_MAGIC, .cpu = slot, .gpu_address = 0x1000};
  TEST_CHECK(nvhcq_signal_value(sig) == 7 && nvhcq_signal_timestamp_ns(sig) == 99);
  nvhcq_signal_set(sig, 8);
  TEST_CHECK(nvhcq_signal_value(sig) == 8 && nvhcq_signal_gpu_address(sig) == 0x1000);
  nvhcq_retire(sig);
  TEST_CHECK(nvhcq_signal_value(sig) == 0);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "freed already"), "%s", nvhcq_last_error());
}

/* A freed handle is refused with a message that says it was freed, not touched. */
static void t_stale_handles(void) {
  nvhcq_buffer *b = calloc(1, sizeof *b);
  b->magic = NVHCQ_BUFFER_MAGIC;
  TEST_CHECK(nvhcq_buffer_check(b, "test") == NVHCQ_SUCCESS);
  nvhcq_retire(b); /* what nvhcq_buffer_destroy does last */
  TEST_CHECK(nvhcq_buffer_check(b, "test") == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "freed already"), "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_buffer_destroy(b) == NVHCQ_ERROR_INVALID_ARGUMENT); /* double free */
  int not_ours[8] = {0};
  TEST_CHECK(nvhcq_buffer_destroy((nvhcq_buffer *)not_ours) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "not made by nvhcq") != NULL);
  TEST_CHECK(nvhcq_signal_destroy((nvhcq_signal *)not_ours) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_destroy((nvhcq_queue *)not_ours) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_module_unload((nvhcq_module *)not_ours) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_close((nvhcq_device *)not_ours) == NVHCQ_ERROR_INVALID_ARGUMENT);
}

/* UVM's fault events become the fault report; events from before a recovery are ignored. */
static void t_uvm_fault_events(void) {
  static uint8_t ring[256 * UVM_TOOLS_EVENT_ENTRY_BYTES];
  static UVM_TOOLS_EVENT_CONTROL ctl;
  static uint64_t values[2][2];
  nvhcq_signal timelines[2] = {{.cpu = values[0]}, {.cpu = values[1]}};
  nvhcq_device *dev = calloc(1, sizeof *dev);
  dev->fault.tools_fd = -1, dev->fault.tools_ring = ring, dev->fault.tools_ctl = &ctl;
  dev->timeline.signal[0] = &timelines[0], dev->timeline.signal[1] = &timelines[1];
  pthread_mutex_init(&dev->fault.lock, NULL);
  TEST_CHECK(nvhcq_device_check_faults(dev) == NVHCQ_SUCCESS);
  UVM_EVENT_GPU_FAULT g = {.eventType = UVM_EVENT_TYPE_GPU_FAULT, .clientType = 2};
  UVM_EVENT_FATAL_FAULT f = {
      .eventType = UVM_EVENT_TYPE_FATAL_FAULT, .faultType = 2, .accessType = 1, .address = 0x7000};
  memcpy(ring, &g, sizeof g);
  memcpy(ring + UVM_TOOLS_EVENT_ENTRY_BYTES, &f, sizeof f);
  ctl.put_behind = 2;
  TEST_CHECK(nvhcq_device_check_faults(dev) == NVHCQ_ERROR_GPU_FAULT);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(),
                        "MMU fault in a copy or the host interface: read at address 0x7000 "
                        "(page), no page table entry (unmapped address)"),
                 "%s", nvhcq_last_error());
  TEST_CHECK(dev->broken && ctl.get_behind == 2 && ctl.get_ahead == 2);
  TEST_CHECK(nvhcq_device_check_faults(dev) == NVHCQ_ERROR_GPU_FAULT); /* until recovery */
  dev->fault.text[0] = '\0';
  nvhcq_fault_watch_reset(dev);
  memcpy(ring + 2 * UVM_TOOLS_EVENT_ENTRY_BYTES, &f, sizeof f); /* stamped before the reset */
  ctl.put_behind = 3;
  TEST_CHECK(nvhcq_device_check_faults(dev) == NVHCQ_SUCCESS);
  TEST_CHECK(ctl.get_behind == 3);
  free(dev);
}

static volatile uint64_t wait_word;

static void *set_word_later(void *arg) {
  (void)arg;
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
  __atomic_store_n(&wait_word, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void t_wait_value(void) {
  /* Reached already: no sleep, even when the work was expected to take 10 s. */
  wait_word = 1;
  /* A wait that slept would sleep 7/8 of the 1000 ms timeout the expected time is clamped to;
   * 200 ms is far below that and far above a return under valgrind or a loaded machine. Whole
   * seconds (tv_sec) would not do: a call of microseconds can straddle a second boundary. */
  double t0 = test_now_ms();
  TEST_CHECK(nvhcq_wait_value(NULL, &wait_word, 1, 1000, 10000000000ull, "w") == NVHCQ_SUCCESS);
  double took = test_now_ms() - t0;
  TEST_CHECK_MSG(took < 200, "a value already reached took %.1f ms", took);
  /* Set by another thread during the expected time, during the spin, and during the back-off. */
  uint64_t expect_ns[3] = {20000000, 1000000, 0};
  for (int i = 0; i < 3; i++) {
    wait_word = 0;
    pthread_t t;
    TEST_CHECK(pthread_create(&t, NULL, set_word_later, NULL) == 0);
    TEST_CHECK(nvhcq_wait_value(NULL, &wait_word, 1, 5000, expect_ns[i], "w") == NVHCQ_SUCCESS);
    TEST_CHECK(wait_word == 1);
    pthread_join(t, NULL);
  }
  /* Never set: the timeout ends the wait, whatever was expected. */
  wait_word = 0;
  TEST_CHECK(nvhcq_wait_value(NULL, &wait_word, 2, 20, 5000000, "test word") ==
             NVHCQ_ERROR_TIMEOUT);
  TEST_CHECK_MSG(
      strstr(nvhcq_last_error(), "test word: waited 20 ms for value 2, the signal holds 0"), "%s",
      nvhcq_last_error());
}

/* A handled failure inside a call (a probe) leaves the last failed call's message in place. */
static void t_error_saved(void) {
  nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "the caller's own failure");
  nvhcq_error_saved saved;
  nvhcq_error_save(&saved);
  nvhcq_fail(NVHCQ_ERROR_DRIVER, "an optional query the driver did not answer");
  nvhcq_error_restore(&saved);
  TEST_CHECK_MSG(!strcmp(nvhcq_last_error(), "the caller's own failure"), "%s", nvhcq_last_error());
  nvhcq_clear_error();
  nvhcq_error_save(&saved);
  nvhcq_fail(NVHCQ_ERROR_DRIVER, "probe");
  nvhcq_error_restore(&saved);
  TEST_CHECK(!strcmp(nvhcq_last_error(), "no error"));
}

TEST_MAIN(TEST(t_error_saved), TEST(t_stale_handles), TEST(t_wait_value), TEST(t_uvm_fault_events),
          TEST(t_method_header), TEST(t_push_encoding_and_print), TEST(t_push_decode),
          TEST(t_va_allocator), TEST(t_visible_devices), TEST(t_branches),
          TEST(t_trace_format_and_status), TEST(t_ring_arithmetic), TEST(t_mock_no_driver),
          TEST(t_mock_unknown_branch), TEST(t_null_handles), TEST(t_null_accessors))
