/* cuGetProcAddress: the versioned name table of driver 580 (which exported symbol a name means at
 * a CUDA version, per stream flavour), resolved in this library's own dynamic symbol table. */
#include <dlfcn.h>
#include <string.h>

#include "internal.h"

typedef struct procaddr {
  const char *name;
  int flags;
  int version;
  const char *symbol;
} procaddr;

static const procaddr table[] = {
#include "procaddr_table.h"
};

#define TABLE_SIZE (sizeof table / sizeof *table)

/* The first entry of `name` in the sorted table, or TABLE_SIZE. */
static size_t first_of(const char *name) {
  size_t lo = 0, hi = TABLE_SIZE;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(table[mid].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < TABLE_SIZE && !strcmp(table[lo].name, name) ? lo : TABLE_SIZE;
}

/* This library, for dlsym: found through the address of one of its functions. */
static void *self(void) {
  static void *handle;
  if (!handle) {
    Dl_info info;
    if (dladdr((void *)(uintptr_t)&cuGetProcAddress_v2, &info) && info.dli_fname)
      handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }
  return handle;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, uint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  if (symbolStatus) *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!*symbol) { /* cudart's probe: asked first, success with no function */
    if (symbolStatus) *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  int flavour = flags & 2 ? 2 : flags & 1 ? 1 : 0;
  const procaddr *hit = NULL;
  size_t i = first_of(symbol);
  int known = i < TABLE_SIZE;
  for (; i < TABLE_SIZE && !strcmp(table[i].name, symbol); i++)
    if (table[i].flags == flavour && table[i].version <= cudaVersion) hit = &table[i];
  if (!hit) {
    if (known && symbolStatus) *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    /* A note, not a logged error: bindings look up every name they know, newer ones too. */
    nvcu_note("cuGetProcAddress(%s, %d, %d): %s", symbol, cudaVersion, flavour,
              known ? "not at this version" : "unknown name");
    return CUDA_ERROR_NOT_FOUND;
  }
  void *h = self();
  *pfn = h ? dlsym(h, hit->symbol) : NULL;
  if (!*pfn) return CUDA_ERROR_NOT_FOUND;
  if (symbolStatus) *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, uint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
