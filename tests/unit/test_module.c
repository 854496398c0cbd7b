/* Module loading on the mock GPU: images live in the device's module arena, so that loads after the
 * first make no driver call; an unloaded module's addresses are not handed out again while the
 * GPU may still run its code; the arena keeps one empty chunk and frees the others; free memory
 * counts its empty chunks as free; and a kernel's QMD template is built on its first lookup. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/device.h"
#include "exec/module.h"
#include "mock/mock.h"
#include "nvhcq.h"
#include "mock_test.h"
#include "test.h"

static void *cubin;
static size_t cubin_size;

/* The device tests' cubin for the mock's sm_90, read once; NULL (a skip) without nvcc. */
static int read_cubin(void) {
  if (cubin) return 1;
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[600];
  snprintf(path, sizeof path, "%s/device_kernels_sm_90.cubin",
           dir ? dir : NVHCQ_TEST_CUBIN_DEFAULT);
  cubin = test_read_file(path, &cubin_size);
  return cubin != NULL;
}

#define NEED_MOCK_DEVICE_AND_CUBIN(dev)                                                            \
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();                                                             \
  if (!read_cubin()) TEST_SKIP("no device_kernels_sm_90.cubin (built with nvcc)");                 \
  nvhcq_device *dev = open_mock();                                                                 \
  if (!dev) return

static nvhcq_module *load(nvhcq_device *dev) {
  nvhcq_module *m = NULL;
  nvhcq_status s = nvhcq_module_load(dev, cubin, cubin_size, &m);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "load: %s", nvhcq_last_error());
  return m;
}

/* Driver calls (RM, UVM, open, mmap: the mock's "any") a load and its unload make. */
static void t_loads_after_the_first_call_no_driver(void) {
  NEED_MOCK_DEVICE_AND_CUBIN(dev);
  nvhcq_mock_fail("any", 0); /* counts only */
  nvhcq_module *first = load(dev);
  uint32_t first_calls = nvhcq_mock_fail_count();
  TEST_CHECK_MSG(first_calls > 0 && nvhcq_arena_chunk_count(dev) == 1,
                 "the first load made %u driver calls and %u chunks", first_calls,
                 nvhcq_arena_chunk_count(dev));
  uint32_t objects = nvhcq_mock_live().objects;
  for (int i = 0; i < 20; i++) {
    nvhcq_mock_fail("any", 0);
    nvhcq_module *m = load(dev);
    nvhcq_kernel *k = NULL;
    TEST_CHECK(m && nvhcq_module_get_kernel(m, "step", &k) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
    if (i % 2) TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(nvhcq_mock_fail_count() == 0, "load %d made %u driver calls", i + 2,
                   nvhcq_mock_fail_count());
  }
  nvhcq_mock_fail(NULL, 0);
  TEST_CHECK_MSG(nvhcq_mock_live().objects == objects && nvhcq_arena_chunk_count(dev) == 1,
                 "%u driver objects (%u before), %u chunks", nvhcq_mock_live().objects, objects,
                 nvhcq_arena_chunk_count(dev));
  TEST_CHECK(nvhcq_module_unload(first) == NVHCQ_SUCCESS);
  close_mock(dev);
}

/* While a queued wait holds the compute channel, an unloaded module's range stays taken: the next
 * load goes elsewhere. Once the GPU is past it, the range is handed out again. */
static void t_unloaded_code_kept_while_the_gpu_may_run_it(void) {
  NEED_MOCK_DEVICE_AND_CUBIN(dev);
  nvhcq_signal *gate;
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &gate) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  nvhcq_module *a = load(dev);
  if (!a) return;
  uint64_t at_a = a->image.gpu_address;
  TEST_CHECK(nvhcq_queue_gpu_wait(q, gate, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_module_unload(a) == NVHCQ_SUCCESS);
  nvhcq_module *b = load(dev);
  TEST_CHECK_MSG(b && b->image.gpu_address != at_a,
                 "a module loaded while the GPU may still run the unloaded one's code took its "
                 "addresses (0x%llx)",
                 (unsigned long long)at_a);
  TEST_CHECK(nvhcq_reclaim_pending(dev) == 1);
  nvhcq_signal_set(gate, 1);
  TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, 0) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  nvhcq_module *c = load(dev);
  TEST_CHECK_MSG(c && c->image.gpu_address == at_a && nvhcq_arena_chunk_count(dev) == 1,
                 "after the GPU passed the unload, the next load went to 0x%llx, not 0x%llx",
                 c ? (unsigned long long)c->image.gpu_address : 0ull, (unsigned long long)at_a);
  /* A fault's PC is named by the live module that holds it. */
  const char *name = NULL;
  uint64_t offset = 0;
  nvhcq_kernel *k = NULL;
  TEST_CHECK(c && nvhcq_module_get_kernel(c, "step", &k) == NVHCQ_SUCCESS);
  uint64_t pc = k ? c->image.gpu_address + k->cubin->code_offset + 0x10 : 0;
  TEST_CHECK(k && nvhcq_module_name_pc(dev, pc, &name, &offset) && !strcmp(name, "step") &&
             offset == 0x10);
  TEST_CHECK(nvhcq_module_unload(b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_module_unload(c) == NVHCQ_SUCCESS);
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(gate);
  close_mock(dev);
}

/* Slices that do not fit a chunk get a new one; one empty chunk is kept, a second is freed, and
 * an image larger than a chunk gets one of its own that goes with it. */
static void t_arena_chunks(void) {
  NEED_MOCK_DEVICE_AND_CUBIN(dev);
  const uint64_t mib = 1u << 20;
  nvhcq_arena_slice a, b, big;
  TEST_CHECK(nvhcq_arena_alloc(dev, 3 * mib, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_arena_alloc(dev, 3 * mib, &b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_arena_chunk_count(dev) == 2 && a.chunk != b.chunk);
  TEST_CHECK(a.gpu_address % NVHCQ_ARENA_ALIGN == 0 && b.gpu_address % NVHCQ_ARENA_ALIGN == 0);
  memset(nvhcq_arena_host(&a), 0x5a, 3 * mib); /* the CPU mapping covers the slice */
  TEST_CHECK(nvhcq_mock_gpu_pointer(a.gpu_address, 3 * mib) != NULL);
  nvhcq_arena_free(dev, &a);
  TEST_CHECK(nvhcq_arena_chunk_count(dev) == 2); /* one empty chunk stays */
  nvhcq_arena_free(dev, &b);
  TEST_CHECK(nvhcq_arena_chunk_count(dev) == 1); /* the second empty one goes */
  TEST_CHECK(nvhcq_arena_alloc(dev, 9 * mib, &big) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_arena_chunk_count(dev) == 2 && big.chunk->buf->size >= 9 * mib);
  nvhcq_arena_free(dev, &big);
  TEST_CHECK(nvhcq_arena_chunk_count(dev) == 1);
  nvhcq_arena_trim(dev);
  TEST_CHECK(nvhcq_arena_chunk_count(dev) == 0);
  close_mock(dev);
}

/* Free memory after an unload is what it was before the load: empty chunks count as free. */
static void t_free_memory_after_unload(void) {
  NEED_MOCK_DEVICE_AND_CUBIN(dev);
  uint64_t before = 0, loaded = 0, after = 0;
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &before) == NVHCQ_SUCCESS);
  nvhcq_module *m = load(dev);
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &loaded) == NVHCQ_SUCCESS);
  TEST_CHECK(m && nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &after) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(loaded < before && after == before,
                 "free memory %llu KiB before the load, %llu loaded, %llu after the unload",
                 (unsigned long long)before >> 10, (unsigned long long)loaded >> 10,
                 (unsigned long long)after >> 10);
  close_mock(dev);
}

/* The template is built on the first lookup, once, and binds the module's code. */
static void t_template_on_first_lookup(void) {
  NEED_MOCK_DEVICE_AND_CUBIN(dev);
  nvhcq_module *m = load(dev);
  if (!m) return;
  int built = 0;
  for (uint32_t i = 0; i < m->kernel_count; i++) built += m->kernels[i].qmd_built;
  TEST_CHECK_MSG(built == 0, "%d templates built at load", built);
  nvhcq_kernel *k = NULL, *again = NULL;
  TEST_CHECK(nvhcq_module_get_kernel(m, "vector_add", &k) == NVHCQ_SUCCESS);
  TEST_CHECK(k && k->qmd_built);
  uint32_t copy[NVHCQ_QMD_MAX_WORDS];
  if (k) memcpy(copy, k->qmd, sizeof copy);
  TEST_CHECK(nvhcq_module_get_kernel(m, "vector_add", &again) == NVHCQ_SUCCESS && again == k);
  TEST_CHECK(k && !memcmp(copy, k->qmd, sizeof copy));
  nvhcq_qmd_version v = dev->compute_state.qmd_version;
  uint64_t shifted = k ? nvhcq_qmd_get(v, k->qmd, NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED) |
                             nvhcq_qmd_get(v, k->qmd, NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED)
                                 << 32
                       : 0;
  /* the field counts 256-byte units: the kernel's code (128-byte aligned) from the unit it is in */
  TEST_CHECK_MSG(k && shifted << 8 == ((m->image.gpu_address + k->cubin->code_offset) & ~0xffull),
                 "the QMD prefetches code from 0x%llx", (unsigned long long)shifted << 8);
  /* ... through the kernel's last byte and the 2 KiB the fetcher reads ahead, as libcuda asks */
  uint64_t end = k ? m->image.gpu_address + k->cubin->code_offset + k->cubin->code_size + 2048 : 0;
  uint64_t units = k ? nvhcq_qmd_get(v, k->qmd, NVHCQ_QMD_PROGRAM_PREFETCH_SIZE) : 0;
  TEST_CHECK_MSG(k && (shifted + units) << 8 >= end && (shifted + units - 1) << 8 < end,
                 "the QMD prefetches %llu units for code ending at 0x%llx",
                 (unsigned long long)units, (unsigned long long)end - 2048);
  TEST_CHECK(nvhcq_module_get_kernel(m, "no_such_kernel", &k) == NVHCQ_ERROR_NOT_FOUND);
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  close_mock(dev);
}

TEST_MAIN(TEST(t_loads_after_the_first_call_no_driver),
          TEST(t_unloaded_code_kept_while_the_gpu_may_run_it), TEST(t_arena_chunks),
          TEST(t_free_memory_after_unload), TEST(t_template_on_first_lookup))
