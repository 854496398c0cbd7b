/* A program built against an installed nvhcq: it opens the first GPU, copies a buffer with the
 * copy engine through a queue and a signal, and checks the bytes; without a GPU it says so. */
#include <nvhcq.h>

#include <stdio.h>
#include <string.h>

#define N 4096

static int fail(const char *what) {
  fprintf(stderr, "%s: %s\n", what, nvhcq_last_error());
  return 1;
}

static int copy_and_check(nvhcq_device *dev) {
  static unsigned char in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (unsigned char)(i * 7 + 1);
  nvhcq_buffer *a = NULL, *b = NULL;
  nvhcq_queue *q = NULL;
  nvhcq_signal *done = NULL;
  int rc = 1;
  if (nvhcq_buffer_create(dev, N, NVHCQ_MEMORY_DEVICE, &a) ||
      nvhcq_buffer_create(dev, N, NVHCQ_MEMORY_DEVICE, &b) || nvhcq_signal_create(dev, 0, &done) ||
      nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q))
    rc = fail("create");
  else if (nvhcq_buffer_write(a, 0, in, N) ||
           nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(b), nvhcq_buffer_gpu_address(a), N) ||
           nvhcq_queue_signal(q, done, 1) || nvhcq_queue_submit(q) ||
           nvhcq_signal_cpu_wait(done, 1, 0) || nvhcq_buffer_read(out, b, 0, N))
    rc = fail("copy");
  else if (memcmp(in, out, N) != 0)
    fprintf(stderr, "copy: the bytes read back differ from those written\n");
  else
    rc = 0;
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(done);
  nvhcq_buffer_destroy(b);
  nvhcq_buffer_destroy(a);
  return rc;
}

int main(void) {
  printf("nvhcq %u.%u (header %u.%u)\n", nvhcq_version() >> 16, nvhcq_version() & 0xffff,
         NVHCQ_VERSION_MAJOR, NVHCQ_VERSION_MINOR);
  int count = 0;
  nvhcq_status s = nvhcq_device_count(&count);
  if (s || count == 0) {
    /* A build machine without a GPU: building and linking was the point. */
    printf("SKIP: needs a GPU (%s)\n", s ? nvhcq_last_error() : "none visible");
    return 0;
  }
  nvhcq_device *dev;
  if (nvhcq_device_open(0, &dev)) return fail("open GPU 0");
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  int rc = copy_and_check(dev);
  if (rc == 0)
    printf("%s (%s): %d bytes copied by the copy engine and checked\n", info.name, info.arch, N);
  nvhcq_device_close(dev);
  return rc;
}
