/* Code written for 0.1: it uses only 0.1 names, through the public header alone, and links against
 * the shared library, whose exports must still hold them. Without a GPU every call fails cleanly;
 * the statuses are those 0.1 gave. Built with the deprecation warnings silenced (each 0.1 name
 * warns with its 0.2 name otherwise). */
#include <nvhcq.h>
#include <string.h>

#include "test.h"

static void t_buffers_and_copies(void) {
  nvhcq_buffer *b = NULL;
  nvhcq_memory_kind kind = NVHCQ_MEMORY_HOST;
  TEST_CHECK(nvhcq_alloc(NULL, 64, kind, &b) == NVHCQ_ERROR_INVALID_ARGUMENT && b == NULL);
  TEST_CHECK(nvhcq_free(NULL) == NVHCQ_SUCCESS);
  char bytes[8] = {0};
  TEST_CHECK(nvhcq_copy_to_device(NULL, 0, bytes, 8) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_copy_from_device(bytes, NULL, 0, 8) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_copy_device(NULL, 0, NULL, 0, 8) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_size(NULL) == 0); /* a name 0.1 and 0.2 share */
}

static void t_devices_and_waits(void) {
  TEST_CHECK(nvhcq_device_synchronize(NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  uint64_t free_bytes = 0;
  TEST_CHECK(nvhcq_device_free_memory(NULL, &free_bytes) == NVHCQ_ERROR_INVALID_ARGUMENT);
  nvhcq_device_info info; /* 0.1 code does not set struct_size */
  memset(&info, 0, sizeof info);
  TEST_CHECK(nvhcq_device_get_info(NULL, &info) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "device is NULL") != NULL);
  TEST_CHECK(nvhcq_signal_wait(NULL, 1, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_wait(NULL, NULL, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_wait_var(NULL, NULL, 0) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_wait_idle(NULL, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_graph_wait(NULL, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  nvhcq_queue_kind qk = NVHCQ_QUEUE_COPY;
  nvhcq_queue *q = NULL;
  TEST_CHECK(nvhcq_queue_create(NULL, qk, &q) == NVHCQ_ERROR_INVALID_ARGUMENT);
}

static void t_kernels_and_compiling(void) {
  nvhcq_dim3 one = {1, 1, 1};
  TEST_CHECK(nvhcq_launch_sync(NULL, one, one, 0, NULL, 0, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  nvhcq_kernel_info ki;
  TEST_CHECK(nvhcq_kernel_get_info(NULL, &ki) == NVHCQ_ERROR_INVALID_ARGUMENT);
  nvhcq_occupancy occ;
  TEST_CHECK(nvhcq_kernel_get_occupancy(NULL, one, 0, &occ) == NVHCQ_ERROR_INVALID_ARGUMENT);
  static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n";
  nvhcq_source_kind sk = nvhcq_detect_source(ptx, sizeof ptx - 1);
  TEST_CHECK(sk == NVHCQ_SOURCE_PTX);
  void *binary = NULL;
  size_t binary_size = 0;
  nvhcq_status s = nvhcq_compile(NULL, 0, "sm_90", NULL, 0, &binary, &binary_size);
  TEST_CHECK_MSG(s == NVHCQ_ERROR_INVALID_ARGUMENT, "%s", nvhcq_status_name(s));
  nvhcq_free_binary(binary);
  switch (s) { /* a status in a switch, as 0.1 code may have it */
  case NVHCQ_SUCCESS:
    TEST_CHECK(0);
    break;
  default:
    TEST_CHECK(strcmp(nvhcq_status_name(s), "NVHCQ_ERROR_INVALID_ARGUMENT") == 0);
  }
}

TEST_MAIN(TEST(t_buffers_and_copies), TEST(t_devices_and_waits), TEST(t_kernels_and_compiling))
