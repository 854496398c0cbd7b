/* GPU-side failures injected into the mock GPU (nvhcq_mock_gpu_fail): an MMU fault in the nth
 * kernel or copy or at a chosen page, with UVM's fault events and without UVM (RM's records), an
 * Xid from the SMs and from a copy engine, a doorbell the GPU loses and a channel that no longer
 * hears its doorbell. Each must end in the error the user is told (what happened, on which GPU and
 * channel, what to do), a working nvhcq_device_recover, and nothing left once the device closes. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock/mock.h"
#include "nvhcq.h"
#include "test.h"

#define WORDS 2048 /* two pages of ints */

static nvhcq_device *dev;
static nvhcq_module *mod;
static nvhcq_kernel *step;
static nvhcq_buffer *in, *out, *host;
static nvhcq_signal *sig;
static uint64_t sig_value;
static int fds_before;
static char cubin_path[600];

static int has(const char *part) {
  int found = strstr(nvhcq_last_error(), part) != NULL;
  TEST_CHECK_MSG(found, "no \"%s\" in: %s", part, nvhcq_last_error());
  return found;
}

/* "0x..." of the page holding a GPU address, as the fault reports write it. */
static const char *page_of(uint64_t address, int page) {
  static char text[4][32];
  static int next;
  char *t = text[next++ % 4];
  snprintf(t, 32, "address 0x%llx", (unsigned long long)(page ? address & ~4095ull : address));
  return t;
}

static void find_kernels(void) {
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  snprintf(cubin_path, sizeof cubin_path, "%s/device_kernels_sm_90.cubin",
           dir ? dir : NVHCQ_TEST_CUBIN_DEFAULT);
  if (access(cubin_path, R_OK) != 0) cubin_path[0] = 0;
  setenv("NVHCQ_MOCK_PTX", NVHCQ_PTX_DIR "/device_kernels.ptx", 1);
}

/* A fresh mock and device (NVHCQ_UVM=off where `uvm` is 0), the test kernels if there are any,
 * and buffers in (0, 1, 2, ...) and out on the device, host in host memory. */
static int open_device(int uvm) {
  find_kernels();
  if (uvm)
    unsetenv("NVHCQ_UVM");
  else
    setenv("NVHCQ_UVM", "off", 1);
  fds_before = test_count_fds();
  nvhcq_mock_install();
  int bad = nvhcq_device_open(0, &dev) != NVHCQ_SUCCESS;
  TEST_CHECK_MSG(!bad, "open: %s", nvhcq_last_error());
  if (bad) return 1;
  /* UVM's fault reports from the first kernel on: the move is made now, not at a submission. */
  if (uvm) TEST_CHECK_MSG(nvhcq_device_attach_uvm(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (cubin_path[0]) {
    TEST_CHECK(nvhcq_module_load_file(dev, cubin_path, &mod) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_module_get_kernel(mod, "step", &step) == NVHCQ_SUCCESS);
  }
  TEST_CHECK(nvhcq_buffer_create(dev, WORDS * 4, NVHCQ_MEMORY_DEVICE, &in) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, WORDS * 4, NVHCQ_MEMORY_DEVICE, &out) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, WORDS * 4, NVHCQ_MEMORY_HOST, &host) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &sig) == NVHCQ_SUCCESS);
  sig_value = 0;
  int data[WORDS];
  for (int i = 0; i < WORDS; i++) data[i] = i;
  TEST_CHECK(nvhcq_buffer_write(in, 0, data, sizeof data) == NVHCQ_SUCCESS);
  return test_failed_checks != 0;
}

/* Closes everything: the mock must hold no object, fd, channel, range or module after, and the
 * process no more fds than before. */
static void close_device(void) {
  nvhcq_signal_destroy(sig);
  nvhcq_buffer_destroy(in), nvhcq_buffer_destroy(out), nvhcq_buffer_destroy(host);
  nvhcq_module_unload(mod);
  TEST_CHECK_MSG(nvhcq_device_close_wait(dev) == NVHCQ_SUCCESS, "close: %s", nvhcq_last_error());
  dev = NULL, mod = NULL, step = NULL, in = out = host = NULL, sig = NULL;
  nvhcq_mock_gpu_fail(NULL, 0, 0);
  nvhcq_mock_counts c = nvhcq_mock_live();
  int empty = c.objects == 0 && c.fds == 0 && c.channels == 0 && c.ranges == 0 && c.modules == 0;
  TEST_CHECK_MSG(empty, "left: %u objects, %u fds, %u channels, %u ranges, %u modules", c.objects,
                 c.fds, c.channels, c.ranges, c.modules);
  TEST_CHECK_MSG(test_count_fds() == fds_before, "%d fds open, %d before", test_count_fds(),
                 fds_before);
  if (empty) nvhcq_mock_uninstall();
  unsetenv("NVHCQ_UVM");
}

static nvhcq_status launch_step(nvhcq_queue *q, int n) {
  struct {
    uint64_t in, out;
    int n;
  } args = {nvhcq_buffer_gpu_address(in), nvhcq_buffer_gpu_address(out), n};
  return nvhcq_queue_launch(q, step, (nvhcq_dim3){(unsigned)(n + 255) / 256, 1, 1},
                            (nvhcq_dim3){256, 1, 1}, 0, &args, 20);
}

/* Signals the next value at the end of the queue's work, submits and waits (device timeout). */
static nvhcq_status submit_and_wait(nvhcq_queue *q) {
  TEST_CHECK(nvhcq_queue_signal(q, sig, ++sig_value) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  return nvhcq_signal_cpu_wait(sig, sig_value, 0);
}

/* The kernel `out = 2 * in + 1` over all of in, on a queue of its own. */
static nvhcq_status run_step(void) {
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(launch_step(q, WORDS) == NVHCQ_SUCCESS);
  nvhcq_status s = submit_and_wait(q);
  nvhcq_queue_destroy(q);
  return s;
}

static nvhcq_status copy_to_host(void) {
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(host), nvhcq_buffer_gpu_address(in),
                              WORDS * 4) == NVHCQ_SUCCESS);
  nvhcq_status s = submit_and_wait(q);
  nvhcq_queue_destroy(q);
  return s;
}

static int host_holds_in(void) {
  const int *h = nvhcq_buffer_host_pointer(host);
  int bad = 0;
  for (int i = 0; i < WORDS; i++) bad += h[i] != i;
  return bad == 0;
}

static int out_is_step(void) {
  int data[WORDS];
  if (nvhcq_buffer_read(data, out, 0, sizeof data)) return 0;
  int bad = 0;
  for (int i = 0; i < WORDS; i++) bad += data[i] != 2 * i + 1;
  return bad == 0;
}

/* A failed wait must leave the device refusing work at once, saying to recover; recovery then
 * gives a device on which copies and kernels work again. */
static void recover_works(void) {
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) != NVHCQ_SUCCESS);
  has("call nvhcq_device_recover");
  TEST_CHECK_MSG(nvhcq_device_recover(dev) == NVHCQ_SUCCESS, "recover: %s", nvhcq_last_error());
  memset(nvhcq_buffer_host_pointer(host), 0, WORDS * 4);
  TEST_CHECK_MSG(copy_to_host() == NVHCQ_SUCCESS && host_holds_in(), "a copy after recovery: %s",
                 nvhcq_last_error());
  if (step)
    TEST_CHECK_MSG(run_step() == NVHCQ_SUCCESS && out_is_step(), "a kernel after recovery: %s",
                   nvhcq_last_error());
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
}

static int fired(void) {
  nvhcq_mock_injected r = nvhcq_mock_gpu_fail_status();
  TEST_CHECK_MSG(r.fired == 1, "the injected failure did not happen");
  return r.fired == 1;
}

/* AddressSanitizer's shadow takes the addresses below 2^40 that device memory needs. */
#ifdef NO_DEVICE_ADDRESS_SPACE
#define SKIP_UNDER_ASAN() TEST_SKIP("AddressSanitizer leaves no addresses below 2^40 for devices")
#else
#define SKIP_UNDER_ASAN() (void)0
#endif

#define NEED_KERNELS()                                                                             \
  do {                                                                                             \
    find_kernels();                                                                                \
    if (!cubin_path[0]) TEST_SKIP("needs the device tests' cubin (built by nvcc)");                \
  } while (0)

/* ---- MMU faults ---- */

/* The second of two chained kernels faults at its first access, a read of in[0]. With UVM its
 * fault events say so within a millisecond; without, the driver's notifier and MMU record do. */
static void kernel_fault(int uvm) {
  if (open_device(uvm)) return;
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_mock_gpu_fail("mmu_kernel", 2, 0) == 0);
  TEST_CHECK(launch_step(q, WORDS) == NVHCQ_SUCCESS);
  TEST_CHECK(launch_step(q, WORDS) == NVHCQ_SUCCESS);
  nvhcq_status s = submit_and_wait(q);
  printf("  %s: %s\n", uvm ? "UVM" : "NVHCQ_UVM=off", nvhcq_last_error());
  TEST_CHECK(s == NVHCQ_ERROR_GPU_FAULT);
  if (fired()) {
    has("GPU 0: ");
    if (uvm) {
      has("MMU fault in a kernel (the SMs): read at");
      has(page_of(nvhcq_buffer_gpu_address(in), 1));
    } else {
      has("the driver stopped the compute channel: Xid 31, ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, "
          "on the graphics/compute engine; MMU fault: read at");
      has(page_of(nvhcq_buffer_gpu_address(in), 1));
    }
    has("no page directory entry");
    has("last kernel submitted: step");
    has("call nvhcq_device_recover (memory stays valid) or close the device");
  }
  nvhcq_queue_destroy(q);
  recover_works();
  close_device();
}

static void t_mmu_fault_in_nth_kernel(void) {
  SKIP_UNDER_ASAN();
  NEED_KERNELS();
  kernel_fault(1);
  kernel_fault(0);
}

/* The second of two copies faults writing its destination. */
static void copy_fault(int uvm) {
  if (open_device(uvm)) return;
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  uint64_t dst = nvhcq_buffer_gpu_address(out) + 4096;
  TEST_CHECK(nvhcq_mock_gpu_fail("mmu_copy", 2, 0) == 0);
  TEST_CHECK(nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(out), nvhcq_buffer_gpu_address(in),
                              4096) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_copy(q, dst, nvhcq_buffer_gpu_address(in), 4096) == NVHCQ_SUCCESS);
  nvhcq_status s = submit_and_wait(q);
  printf("  %s: %s\n", uvm ? "UVM" : "NVHCQ_UVM=off", nvhcq_last_error());
  TEST_CHECK(s == NVHCQ_ERROR_GPU_FAULT);
  if (fired()) {
    if (uvm) {
      has("GPU 0: MMU fault in a copy or the host interface: write at");
      has(page_of(dst, 1));
    } else {
      has("GPU 0: the driver stopped the copy channel: Xid 31, "
          "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, on the copy engine 0; copy channel fault "
          "record: ");
      has(page_of(dst, 0));
    }
    has("call nvhcq_device_recover (memory stays valid) or close the device");
  }
  nvhcq_queue_destroy(q);
  recover_works();
  close_device();
}

static void t_mmu_fault_in_nth_copy(void) {
  SKIP_UNDER_ASAN();
  copy_fault(1);
  copy_fault(0);
}

/* A page of out faults when the kernel of a graph writes it; the graph replays after recovery. */
static void t_mmu_fault_at_an_address_in_a_graph(void) {
  SKIP_UNDER_ASAN();
  NEED_KERNELS();
  if (open_device(1)) return;
  nvhcq_graph *g;
  nvhcq_node launch, copy;
  struct {
    uint64_t in, out;
    int n;
  } args = {nvhcq_buffer_gpu_address(in), nvhcq_buffer_gpu_address(out), WORDS};
  TEST_CHECK(nvhcq_graph_create(dev, &g) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_graph_add_launch(g, step, (nvhcq_dim3){WORDS / 256, 1, 1},
                                    (nvhcq_dim3){256, 1, 1}, 0, &args, 20, NULL, NULL, 0,
                                    &launch) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_graph_add_copy(g, nvhcq_buffer_gpu_address(host), args.out, WORDS * 4,
                                  NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR, &launch, 1,
                                  &copy) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_graph_instantiate(g) == NVHCQ_SUCCESS);
  uint64_t second_page = args.out + 4096;
  TEST_CHECK(nvhcq_mock_gpu_fail("mmu_address", 1, second_page + 8) == 0);
  TEST_CHECK(nvhcq_graph_launch(g) == NVHCQ_SUCCESS);
  nvhcq_status s = nvhcq_graph_cpu_wait(g, 0);
  printf("  %s\n", nvhcq_last_error());
  TEST_CHECK(s == NVHCQ_ERROR_GPU_FAULT);
  if (fired()) {
    has("GPU 0: MMU fault in a kernel (the SMs): write at");
    has(page_of(second_page, 1));
    has("last kernel submitted: step");
  }
  recover_works();
  memset(nvhcq_buffer_host_pointer(host), 0, WORDS * 4);
  TEST_CHECK(nvhcq_graph_launch(g) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_graph_cpu_wait(g, 0) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  const int *h = nvhcq_buffer_host_pointer(host);
  TEST_CHECK_MSG(h[0] == 1 && h[WORDS - 1] == 2 * WORDS - 1, "the graph after recovery: %d %d",
                 h[0], h[WORDS - 1]);
  nvhcq_graph_destroy(g);
  close_device();
}

/* ---- Xids ---- */

/* An SM exception in the kernel: Xid 13 with the SM's saved registers, the kernel named. */
static void t_xid_13_from_the_sms(void) {
  SKIP_UNDER_ASAN();
  NEED_KERNELS();
  for (int uvm = 1; uvm >= 0; uvm--) {
    if (open_device(uvm)) return;
    TEST_CHECK(nvhcq_mock_gpu_fail("xid_gr", 1, 0) == 0);
    nvhcq_status s = run_step();
    printf("  %s: %s\n", uvm ? "UVM" : "NVHCQ_UVM=off", nvhcq_last_error());
    TEST_CHECK(s == NVHCQ_ERROR_GPU_FAULT);
    if (fired()) {
      has("GPU 0: the driver stopped the compute channel: Xid 13, ROBUST_CHANNEL_GR_EXCEPTION, on "
          "the graphics/compute engine; SM 0: out-of-range address (warp error 0xe) at PC 0x");
      has("(kernel step + 0x0)");
      has("call nvhcq_device_recover (memory stays valid) or close the device");
    }
    recover_works();
    close_device();
  }
}

/* A copy engine's error: its own Xid, on the copy channel, named by engine. */
static void ce_error(const char *copy_engine, const char *want) {
  if (copy_engine)
    setenv("NVHCQ_COPY_ENGINE", copy_engine, 1);
  else
    unsetenv("NVHCQ_COPY_ENGINE");
  int bad = open_device(1);
  unsetenv("NVHCQ_COPY_ENGINE");
  if (bad) return;
  TEST_CHECK(nvhcq_mock_gpu_fail("xid_ce", 1, 0) == 0);
  nvhcq_status s = copy_to_host();
  printf("  %s\n", nvhcq_last_error());
  TEST_CHECK(s == NVHCQ_ERROR_GPU_FAULT);
  if (fired()) {
    has(want);
    has("call nvhcq_device_recover (memory stays valid) or close the device");
  }
  recover_works();
  close_device();
}

static void t_xid_from_a_copy_engine(void) {
  SKIP_UNDER_ASAN();
  ce_error(NULL, "GPU 0: the driver stopped the copy channel: Xid 39, ROBUST_CHANNEL_CE0_ERROR, on "
                 "the copy engine 0");
  ce_error("2", "GPU 0: the driver stopped the copy channel: Xid 41, ROBUST_CHANNEL_CE2_ERROR, on "
                "the copy engine 2");
}

/* ---- doorbells ---- */

/* The GPU loses the doorbell of the only submission a wait waits for: the wait rings it again and
 * the work completes, on either channel. */
static void t_lost_doorbell_is_rung_again(void) {
  SKIP_UNDER_ASAN();
  if (open_device(1)) return;
  for (int copy = 0; copy < 2; copy++) {
    TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
    memset(nvhcq_buffer_host_pointer(host), 0, WORDS * 4);
    TEST_CHECK(nvhcq_mock_gpu_fail("doorbell", 1, 0) == 0);
    nvhcq_status s = copy ? copy_to_host() : step ? run_step() : nvhcq_device_cpu_wait_idle(dev);
    TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s channel: %s", copy ? "copy" : "compute",
                   nvhcq_last_error());
    nvhcq_mock_injected r = nvhcq_mock_gpu_fail_status();
    TEST_CHECK_MSG(r.fired == 1 && r.rung_again == 1 && r.later_put == 0,
                   "%s channel: fired %u, rung again %u, later GP_PUT %u",
                   copy ? "copy" : "compute", r.fired, r.rung_again, r.later_put);
    TEST_CHECK(copy ? host_holds_in() : !step || out_is_step());
  }
  /* Closed while a doorbell is lost: the close neither hangs nor leaves anything. */
  TEST_CHECK(nvhcq_mock_gpu_fail("doorbell", 1, 0) == 0);
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(host), nvhcq_buffer_gpu_address(in),
                              WORDS * 4) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  nvhcq_queue_destroy(q);
  close_device();
}

/* A channel that hears no doorbell any more: the wait times out after the device timeout with
 * what it found (entries the GPU never fetched, on which channel), and recovery makes channels
 * that work. A malformed NVHCQ_TIMEOUT_MS is refused at open. */
static void t_deaf_channel_times_out_clearly(void) {
  SKIP_UNDER_ASAN();
  setenv("NVHCQ_TIMEOUT_MS", "10s", 1);
  nvhcq_mock_install();
  nvhcq_device *d = NULL;
  TEST_CHECK(nvhcq_device_open(0, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  has("NVHCQ_TIMEOUT_MS=10s: say how many milliseconds waits may take");
  nvhcq_mock_uninstall();
  unsetenv("NVHCQ_TIMEOUT_MS");
  if (open_device(1)) return;
  /* Short for the stuck wait only: recovery on a loaded machine may take longer. */
  TEST_CHECK(nvhcq_device_set_timeout(dev, 250) == NVHCQ_SUCCESS);
  /* Every channel has taken up what opening submitted, or the injection may find the compute
   * channel's last GP_PUT (seen later under valgrind) instead of the copy's. */
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_mock_gpu_fail("doorbell_stuck", 1, 0) == 0);
  nvhcq_status s = copy_to_host();
  TEST_CHECK(nvhcq_device_set_timeout(dev, 10000) == NVHCQ_SUCCESS);
  printf("  %s\n", nvhcq_last_error());
  TEST_CHECK(s == NVHCQ_ERROR_TIMEOUT);
  if (fired()) {
    has("waited 250 ms for value 1, the signal holds 0; GPU 0's copy channel (the copy queues' "
        "work) has 1 submitted entry it has not fetched (GP_GET ");
    has("its doorbell rung again ");
    has("the GPU is not running this channel (a doorbell it lost, or a channel it no longer "
        "schedules) and a longer NVHCQ_TIMEOUT_MS will not help");
    TEST_CHECK(strstr(nvhcq_last_error(), "raise NVHCQ_TIMEOUT_MS") == NULL);
  }
  recover_works();
  close_device();
}

/* ---- the specification NVHCQ_MOCK_GPU_FAIL takes ---- */

static void t_spec(void) {
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("xid_gr") == 0);
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("mmu_copy:3") == 0);
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("mmu_address@0x7f0000001000") == 0);
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("mmu_address:2@4096") == 0);
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("mmu_address") == -1); /* which page? */
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("doorbell:0") == -1);
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("xid_ce:2x") == -1);
  TEST_CHECK(nvhcq_mock_gpu_fail_parse("hang") == -1);
  TEST_CHECK(nvhcq_mock_gpu_fail("nonsense", 1, 0) == -1);
  TEST_CHECK(nvhcq_mock_gpu_fail(NULL, 0, 0) == 0);
  TEST_CHECK(nvhcq_mock_gpu_fail_status().fired == 0);
}

TEST_MAIN(TEST(t_mmu_fault_in_nth_kernel), TEST(t_mmu_fault_in_nth_copy),
          TEST(t_mmu_fault_at_an_address_in_a_graph), TEST(t_xid_13_from_the_sms),
          TEST(t_xid_from_a_copy_engine), TEST(t_lost_doorbell_is_rung_again),
          TEST(t_deaf_channel_times_out_clearly), TEST(t_spec))
