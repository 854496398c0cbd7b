/* nvhcq command-line tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvhcq.h"

static int fail(const char *what, nvhcq_status s) {
  fprintf(stderr, "nvhcq: %s: %s (%s)\n", what, nvhcq_last_error(), nvhcq_status_name(s));
  return 1;
}

static void print_info(int index, const nvhcq_device_info *i) {
  printf("GPU %d: %s\n", index, i->name);
  printf("  uuid            %s\n", i->uuid_string);
  printf("  pci             %04x:%02x:%02x.%x\n", i->pci_domain, i->pci_bus, i->pci_device,
         i->pci_function);
  printf("  architecture    %s (SM version 0x%x)\n", i->arch, i->sm_version);
  printf("  multiprocessors %u (chip: %u GPCs x %u TPCs x %u SMs), %u warps each\n", i->sm_count,
         i->gpcs, i->tpcs_per_gpc, i->sms_per_tpc, i->warps_per_sm);
  printf("  memory          %.1f GiB\n", i->memory_bytes / (double)(1ull << 30));
  printf("  driver          %s (%s kernel module)\n", i->driver_version,
         i->open_kernel_module ? "open" : "proprietary");
  printf("  classes         compute 0x%04x, copy 0x%04x, gpfifo 0x%04x, usermode 0x%04x\n",
         i->compute_class, i->copy_class, i->gpfifo_class, i->usermode_class);
  if (i->copy_engine >= 0)
    printf("  copies on       asynchronous copy engine %d\n", i->copy_engine);
  else
    printf("  copies on       the graphics engine's copy engine\n");
  printf("  opened in       %.1f ms\n", i->open_ms);
}

static int cmd_info(void) {
  int count;
  nvhcq_status s = nvhcq_device_count(&count);
  if (s) return fail("listing GPUs", s);
  if (count == 0) {
    fprintf(stderr, "nvhcq: no NVIDIA GPU is visible (check NVHCQ_VISIBLE_DEVICES / "
                    "CUDA_VISIBLE_DEVICES)\n");
    return 1;
  }
  for (int i = 0; i < count; i++) {
    nvhcq_device *dev;
    nvhcq_device_info info;
    if ((s = nvhcq_device_open(i, &dev))) return fail("opening GPU", s);
    nvhcq_device_get_info(dev, &info);
    print_info(i, &info);
    if ((s = nvhcq_device_close(dev))) return fail("closing GPU", s);
  }
  return 0;
}

static void usage(FILE *out) {
  fprintf(out, "usage: nvhcq COMMAND\n\n"
               "commands:\n"
               "  info    list visible GPUs and their facts\n"
               "  help    this text\n\n"
               "environment: NVHCQ_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, NVHCQ_TIMEOUT_MS,\n"
               "             NVHCQ_TRACE=1 (print every driver call)\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "info")) return cmd_info();
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "nvhcq: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
