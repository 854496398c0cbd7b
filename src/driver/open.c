/* Opening the driver: /dev/nvidiactl, a GPU's /dev/nvidiaN registered with it, the GPUs the
 * driver lists (filtered by the visible-devices variables), and UVM's fds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/door.h"
#include "driver/rm.h"

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

const char *nvhcq_visible_list(void) {
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

nvhcq_status nvhcq_list_cards(int fd_ctl, nv_ioctl_card_info_t *cards, int *visible, int *count) {
  memset(cards, 0, sizeof(nv_ioctl_card_info_t) * NV_MAX_CARDS);
  NVHCQ_TRY(nvhcq_rm_escape(fd_ctl, NV_ESC_CARD_INFO, cards,
                            sizeof(nv_ioctl_card_info_t) * NV_MAX_CARDS, "card info"));
  int physical = 0;
  for (int i = 0; i < NV_MAX_CARDS; i++)
    if (cards[i].valid) cards[physical++] = cards[i];
  const char *list = nvhcq_visible_list();
  if (!list) {
    for (int i = 0; i < physical; i++) visible[i] = i;
    *count = physical;
  } else {
    *count = nvhcq_parse_visible(list, physical, NULL, visible, NV_MAX_CARDS);
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_open_gpu(int fd_ctl, uint32_t minor, int *fd) {
  char path[32];
  snprintf(path, sizeof path, "/dev/nvidia%u", minor);
  *fd = nvhcq_door->open(path, O_RDWR);
  if (*fd < 0)
    return nvhcq_fail(NVHCQ_ERROR_NO_DRIVER, "cannot open %s: %s", path, strerror(errno));
  nv_ioctl_register_fd_t reg = {.ctl_fd = fd_ctl};
  nvhcq_status s = nvhcq_rm_escape(*fd, NV_ESC_REGISTER_FD, &reg, sizeof reg, "register fd");
  if (s) {
    nvhcq_door->close(*fd);
    *fd = -1;
  }
  return s;
}

nvhcq_status nvhcq_open_uvm(nvhcq_rm *rm, int *fd_uvm2) {
  rm->fd_uvm = nvhcq_door->open("/dev/nvidia-uvm", O_RDWR);
  *fd_uvm2 = nvhcq_door->open("/dev/nvidia-uvm", O_RDWR);
  if (rm->fd_uvm < 0 || *fd_uvm2 < 0)
    return nvhcq_fail(NVHCQ_ERROR_NO_DRIVER,
                      "cannot open /dev/nvidia-uvm: %s; load the nvidia-uvm module "
                      "(modprobe nvidia-uvm) or run nvidia-modprobe -u",
                      strerror(errno));
  UVM_INITIALIZE_PARAMS init = {0};
  NVHCQ_TRY(nvhcq_uvm_call(rm, UVM_INITIALIZE, "UVM_INITIALIZE", &init,
                           offsetof(UVM_INITIALIZE_PARAMS, rmStatus)));
  /* Ties the second fd to the first's address space; CUDA gets an error here too, harmlessly. */
  UVM_MM_INITIALIZE_PARAMS mm = {.uvmFd = rm->fd_uvm};
  nvhcq_door->ioctl(*fd_uvm2, UVM_MM_INITIALIZE, &mm);
  return NVHCQ_SUCCESS;
}
