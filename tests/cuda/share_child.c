/* The other process of test_cuda_vmm's test_shareable, test_ipc and test_pool_ipc: imports the
 * memory whose POSIX file descriptor it inherited (FD), opens the IPC handle given in hex ("ipc:"
 * and 128 hex digits), or imports a pool from a descriptor and one of its allocations ("pool:FD:"
 * and the export data in hex), checks the bytes the parent wrote and writes its own for the
 * parent to check; or opens an interprocess event and memory ("event:" and the event handle's hex,
 * the memory handle's hex in place of SEED) and waits for the parent's record (open_event).
 * usage: test_cuda_share_child FD|ipc:HEX|pool:FD:HEX|event:HEX SIZE SEED|HEX; exit 0 when the
 * bytes matched and its own are written, 1 on a CUDA error or a mismatch (said on stderr). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_api.h"

#define TRY(x)                                                                                     \
  do {                                                                                             \
    CUresult r_ = (x);                                                                             \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "share_child: %s: %d\n", #x, (int)r_);                                       \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static uint8_t pattern(size_t i, unsigned seed) {
  return (uint8_t)(i * 131u + seed + (i >> 12));
}

static int check_and_write(CUdeviceptr va, size_t size, unsigned seed) {
  uint8_t *buf = malloc(size);
  if (!buf) return 1;
  int bad = cuMemcpyDtoH_v2(buf, va, size) != CUDA_SUCCESS;
  for (size_t i = 0; i < size && !bad; i++)
    if (buf[i] != pattern(i, seed)) {
      fprintf(stderr, "share_child: byte %zu is %u, not %u\n", i, buf[i], pattern(i, seed));
      bad = 1;
    }
  for (size_t i = 0; i < size; i++) buf[i] = pattern(i, seed + 1);
  if (!bad) bad = cuMemcpyHtoD_v2(va, buf, size) != CUDA_SUCCESS;
  free(buf);
  return bad;
}

static int unhex(const char *hex, void *out) {
  for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return fprintf(stderr, "share_child: bad hex\n"), 1;
    ((uint8_t *)out)[i] = (uint8_t)v;
  }
  return 0;
}

/* cuIpcOpenMemHandle of the handle in `hex`, the bytes checked and written, closed. */
static int open_ipc(const char *hex, size_t size, unsigned seed) {
  CUipcMemHandle h;
  if (unhex(hex, h.reserved)) return 1;
  CUdeviceptr p;
  TRY(cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  int bad = check_and_write(p, size, seed);
  TRY(cuIpcCloseMemHandle(p));
  return bad;
}

/* A pool imported from the descriptor `fd` and an allocation of it from the export data in
 * `hex`: the bytes checked and written, freed. */
static int import_pool(int fd, const char *hex, size_t size, unsigned seed) {
  CUmemPoolPtrExportData data;
  if (unhex(hex, data.reserved)) return 1;
  CUmemoryPool pool;
  CUdeviceptr p;
  TRY(cuMemPoolImportFromShareableHandle(&pool, (void *)(intptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  TRY(cuMemPoolImportPointer(&p, pool, &data));
  int bad = check_and_write(p, size, seed);
  TRY(cuMemFree_v2(p));
  TRY(cuMemPoolDestroy(pool));
  return bad;
}

/* The interprocess event of `ev_hex` and the memory of `mem_hex`: the event is not reached yet
 * (the parent holds its record back), this process's stream waits for it, 'w' on standard output
 * says so, and the copy behind the wait must see the parent's memset; then this process records
 * the event itself. */
static int open_event(const char *ev_hex, const char *mem_hex, size_t size) {
  CUipcEventHandle eh;
  CUipcMemHandle mh;
  if (unhex(ev_hex, eh.reserved) || unhex(mem_hex, mh.reserved)) return 1;
  CUevent ev;
  CUdeviceptr p;
  CUstream st;
  uint32_t *host;
  TRY(cuIpcOpenEventHandle(&ev, eh));
  TRY(cuIpcOpenMemHandle_v2(&p, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  TRY(cuMemAllocHost_v2((void **)&host, size));
  TRY(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  if (cuEventQuery(ev) != CUDA_ERROR_NOT_READY)
    return fprintf(stderr, "share_child: the parent's record is held back, yet the event is "
                           "reached\n"),
           1;
  TRY(cuStreamWaitEvent(st, ev, 0));
  if (write(1, "w", 1) != 1) return 1;
  TRY(cuMemcpyDtoHAsync_v2(host, p, size, st));
  TRY(cuStreamSynchronize(st));
  int bad = 0;
  for (size_t i = 0; i < size / 4 && !bad; i++)
    if (host[i] != 0x5eed)
      bad = fprintf(stderr, "share_child: word %zu is 0x%x, not the parent's 0x5eed\n", i, host[i]);
  TRY(cuEventRecord(ev, st));
  TRY(cuEventSynchronize(ev));
  TRY(cuStreamDestroy_v2(st));
  TRY(cuMemFreeHost(host));
  TRY(cuIpcCloseMemHandle(p));
  TRY(cuEventDestroy_v2(ev));
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 4) return fprintf(stderr, "usage: %s FD|ipc:HEX SIZE SEED\n", argv[0]), 1;
  size_t size = strtoull(argv[2], NULL, 0);
  unsigned seed = (unsigned)atoi(argv[3]);
  CUcontext ctx;
  CUmemGenericAllocationHandle h;
  CUdeviceptr va;
  TRY(cuInit(0));
  TRY(cuDevicePrimaryCtxRetain(&ctx, 0));
  TRY(cuCtxSetCurrent(ctx));
  if (!strncmp(argv[1], "pool:", 5)) {
    int bad = import_pool(atoi(argv[1] + 5), strchr(argv[1] + 5, ':') + 1, size, seed);
    TRY(cuDevicePrimaryCtxRelease_v2(0));
    return bad;
  }
  if (!strncmp(argv[1], "event:", 6)) {
    int bad = open_event(argv[1] + 6, argv[3], size);
    TRY(cuDevicePrimaryCtxRelease_v2(0));
    return bad;
  }
  if (!strncmp(argv[1], "ipc:", 4)) {
    int bad = open_ipc(argv[1] + 4, size, seed);
    TRY(cuDevicePrimaryCtxRelease_v2(0));
    return bad;
  }
  int fd = atoi(argv[1]);
  TRY(cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  TRY(cuMemAddressReserve(&va, size, 0, 0, 0));
  TRY(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  TRY(cuMemSetAccess(va, size, &access, 1));
  int bad = check_and_write(va, size, seed);
  TRY(cuMemUnmap(va, size));
  TRY(cuMemRelease(h));
  TRY(cuMemAddressFree(va, size));
  TRY(cuDevicePrimaryCtxRelease_v2(0));
  return bad;
}
