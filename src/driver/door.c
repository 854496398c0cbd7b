/* The real driver behind the door: open (close-on-exec), ioctl retried on EINTR and EAGAIN, mmap,
 * munmap and reading small text files. */
#include "driver/door.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* Every driver fd is close-on-exec: a child process must not keep the GPU's objects alive. */
static int real_open(const char *path, int flags) {
  return open(path, flags | O_CLOEXEC);
}

static int real_ioctl(int fd, unsigned long request, void *arg) {
  int r;
  do r = ioctl(fd, request, arg);
  while (r < 0 && (errno == EINTR || errno == EAGAIN));
  return r < 0 ? -errno : 0;
}

static ssize_t real_read_text(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

static const nvhcq_door_ops real_ops = {
    .open = real_open,
    .close = close,
    .ioctl = real_ioctl,
    .mmap = mmap,
    .munmap = munmap,
    .read_text = real_read_text,
};

const nvhcq_door_ops *nvhcq_door = &real_ops;

void nvhcq_door_set_ops(const nvhcq_door_ops *ops) {
  nvhcq_door = ops ? ops : &real_ops;
}

int nvhcq_door_is_real(void) {
  return nvhcq_door == &real_ops;
}
