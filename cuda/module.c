/* Modules and libraries: cubins, PTX text and fatbins (wrapper and container, the GPU's SASS
 * first, else its PTX compiled by nvhcq; zstd and LZ4 entries), functions and kernels with their
 * parameter tables, globals, function attributes and occupancy. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FATBIN_WRAPPER_MAGIC   0x466243b1u
#define FATBIN_CONTAINER_MAGIC 0xba55ed50u
#define FATBIN_KIND_PTX        1u
#define FATBIN_KIND_ELF        2u
#define FATBIN_FLAG_LZ4        0x2000u
#define FATBIN_FLAG_ZSTD       0x8000u

static uint16_t rd16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const uint8_t *p) {
  return rd16(p) | (uint32_t)rd16(p + 2) << 16;
}
static uint64_t rd64(const uint8_t *p) {
  return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* ---- images ---- */

/* An ELF image's size: the end of its section table or of its furthest section. */
static size_t elf_size(const uint8_t *p) {
  uint64_t shoff = rd64(p + 0x28), phoff = rd64(p + 0x20);
  uint16_t shentsize = rd16(p + 0x3a), shnum = rd16(p + 0x3c), phentsize = rd16(p + 0x36),
           phnum = rd16(p + 0x38);
  uint64_t end = shoff + (uint64_t)shentsize * shnum;
  if (phoff + (uint64_t)phentsize * phnum > end) end = phoff + (uint64_t)phentsize * phnum;
  for (uint16_t i = 0; i < shnum; i++) {
    const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
    uint32_t type = rd32(sh + 4);
    uint64_t last = rd64(sh + 0x18) + rd64(sh + 0x20);
    if (type != 8 /* SHT_NOBITS */ && last > end) end = last;
  }
  return (size_t)end;
}

typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned (*zstd_is_error_fn)(size_t);
typedef int (*lz4_decompress_fn)(const char *, char *, int, int);

static void *library_symbol(const char *const *libs, const char *name) {
  for (int i = 0; libs[i]; i++) {
    void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return dlsym(h, name);
  }
  return NULL;
}

/* Decompresses an entry with zstd or LZ4, loaded when first needed (libzstd.so.1, liblz4.so.1). */
static CUresult decompress(uint64_t flags, const uint8_t *src, size_t n, size_t out_size,
                           uint8_t **out) {
  static const char *const zstd_libs[] = {"libzstd.so.1", "libzstd.so", NULL};
  static const char *const lz4_libs[] = {"liblz4.so.1", "liblz4.so", NULL};
  uint8_t *dst = malloc(out_size + 1);
  if (!dst) return CUDA_ERROR_OUT_OF_MEMORY;
  dst[out_size] = 0;
  int ok = 0;
  if (flags & FATBIN_FLAG_ZSTD) {
    zstd_decompress_fn z = (zstd_decompress_fn)library_symbol(zstd_libs, "ZSTD_decompress");
    zstd_is_error_fn err = (zstd_is_error_fn)library_symbol(zstd_libs, "ZSTD_isError");
    if (!z || !err) {
      fprintf(stderr, "nvhcq-cuda: a fatbin entry is zstd-compressed and libzstd.so.1 was not "
                      "found: install libzstd (e.g. apt-get install libzstd1)\n");
      free(dst);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    size_t got = z(dst, out_size, src, n);
    ok = !err(got) && got == out_size;
  } else {
    lz4_decompress_fn l = (lz4_decompress_fn)library_symbol(lz4_libs, "LZ4_decompress_safe");
    if (!l) {
      fprintf(stderr, "nvhcq-cuda: a fatbin entry is LZ4-compressed and liblz4.so.1 was not "
                      "found: install liblz4 (e.g. apt-get install liblz4-1)\n");
      free(dst);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    ok = l((const char *)src, (char *)dst, (int)n, (int)out_size) == (int)out_size;
  }
  if (!ok) {
    nvcu_log("a compressed fatbin entry did not decompress to its %zu bytes", out_size);
    free(dst);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *out = dst;
  return CUDA_SUCCESS;
}

/* The entry a fatbin offers this GPU: SASS of its architecture (or an older one of the same
 * major version), else the newest PTX not newer than the GPU. */
typedef struct entry {
  const uint8_t *header;
  unsigned sm;
  uint32_t kind;
} entry;

static entry pick_entry(const uint8_t *c, unsigned gpu_sm) {
  entry sass = {0}, ptx = {0};
  uint64_t total = rd64(c + 8);
  const uint8_t *p = c + rd16(c + 6), *end = c + rd16(c + 6) + total;
  while (p + 64 <= end) {
    uint32_t kind = rd16(p), header = rd32(p + 4);
    uint64_t padded = rd64(p + 8);
    unsigned sm = rd32(p + 28);
    if (header < 64) break;
    if (kind == FATBIN_KIND_ELF && sm / 10 == gpu_sm / 10 && sm <= gpu_sm &&
        (!sass.header || sm > sass.sm || sm == gpu_sm))
      sass = (entry){p, sm, kind};
    if (kind == FATBIN_KIND_PTX && sm <= gpu_sm && (!ptx.header || sm > ptx.sm))
      ptx = (entry){p, sm, kind};
    p += header + padded;
  }
  return sass.header ? sass : ptx;
}

/* The payload of an entry, decompressed when it is compressed (*owned says to free it). */
static CUresult entry_payload(entry e, const uint8_t **data, size_t *size, uint8_t **owned) {
  const uint8_t *h = e.header;
  uint32_t header = rd32(h + 4);
  /* The payload's size: compressed entries give it at +16, plain ones only padded at +8. */
  size_t n = rd32(h + 16) ? rd32(h + 16) : (size_t)rd64(h + 8);
  uint64_t flags = rd64(h + 40), full = rd64(h + 56);
  *owned = NULL;
  if (flags & (FATBIN_FLAG_ZSTD | FATBIN_FLAG_LZ4)) {
    CUresult r = decompress(flags, h + header, n, full, owned);
    if (r) return r;
    *data = *owned;
    *size = full;
  } else {
    *data = h + header;
    *size = n;
  }
  return CUDA_SUCCESS;
}

/* The cubin or PTX text in any image cuModuleLoadData takes, copied into memory we own (PTX with
 * its terminating zero). PTX is left for nvhcq_module_load_any to compile, which caches the cubin
 * and keeps the text beside the module (the mock GPU runs kernels from it). */
static CUresult image_code(nvcu_device *d, const void *image, void **code, size_t *size,
                           int *is_ptx) {
  const uint8_t *p = image;
  unsigned gpu_sm = (d->info.sm_version >> 8) * 10 + ((d->info.sm_version >> 4) & 0xf);
  const uint8_t *data = p;
  size_t n = 0;
  uint8_t *owned = NULL;
  CUresult r = CUDA_SUCCESS;
  if (rd32(p) == FATBIN_WRAPPER_MAGIC) p = (const uint8_t *)(uintptr_t)rd64(p + 8);
  if (rd32(p) == FATBIN_CONTAINER_MAGIC) {
    entry e = pick_entry(p, gpu_sm);
    if (!e.header) {
      nvcu_log("the fatbin has neither SASS for sm_%u nor PTX it could be compiled from", gpu_sm);
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    if ((r = entry_payload(e, &data, &n, &owned))) return r;
    if (e.kind == FATBIN_KIND_PTX) n = strnlen((const char *)data, n);
    if (e.kind == FATBIN_KIND_ELF && n >= 64 && elf_size(data) <= n) n = elf_size(data);
  } else if (!memcmp(p,
                     "\x7f"
                     "ELF",
                     4)) {
    n = elf_size(p);
  } else {
    n = strlen((const char *)p);
  }
  *is_ptx = memcmp(data,
                   "\x7f"
                   "ELF",
                   4) != 0;
  if (*is_ptx && nvhcq_source_detect(data, n) != NVHCQ_SOURCE_PTX) {
    nvcu_log("the image is neither a cubin, a fatbin nor PTX text");
    r = CUDA_ERROR_INVALID_IMAGE;
  }
  if (!r && !(*code = malloc(n + 1))) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    memcpy(*code, data, n);
    ((uint8_t *)*code)[n] = 0;
    *size = n;
  }
  free(owned);
  return r;
}

/* Each parameter's offset and size in the argument block, from nvhcq's parameter table. */
static CUresult read_params(struct CUfunc_st *f) {
  f->params = calloc(f->info.param_count ? f->info.param_count : 1, sizeof *f->params);
  if (!f->params) return CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < f->info.param_count; i++) {
    nvhcq_kernel_param p = {.struct_size = sizeof p};
    CUresult r = nvcu_status(nvhcq_kernel_query_param(f->k, i, &p), f->name);
    if (r) return r;
    f->params[i] = (nvcu_param){p.offset, p.size};
  }
  f->param_count = f->info.param_count;
  return CUDA_SUCCESS;
}

CUresult nvcu_func_check(CUfunction f) {
  return f && f->magic == NVCU_FUNC_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult nvcu_pack_args(struct CUfunc_st *f, void **kernelParams, void **extra, uint8_t **out,
                        uint32_t *size) {
  uint32_t n = f->info.param_size;
  *out = NULL;
  *size = n;
  if (n == 0) return CUDA_SUCCESS;
  uint8_t *args = calloc(1, n);
  if (!args) return CUDA_ERROR_OUT_OF_MEMORY;
  if (kernelParams) {
    for (uint32_t i = 0; i < f->param_count; i++)
      if (f->params[i].offset + f->params[i].size <= n)
        memcpy(args + f->params[i].offset, kernelParams[i], f->params[i].size);
  } else if (extra) {
    const void *buf = NULL;
    size_t buf_size = 0;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buf = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        buf_size = *(size_t *)extra[i + 1];
    }
    if (!buf) {
      free(args);
      return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(args, buf, buf_size < n ? buf_size : n);
  } else {
    nvcu_log("%s takes %u bytes of parameters and the launch gives none", f->name, n);
    free(args);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = args;
  return CUDA_SUCCESS;
}

/* ---- modules ---- */

static CUresult mod_check(CUmodule m) {
  return m && m->magic == NVCU_MOD_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Loads any image; `jit` (or NULL) gives the PTX compile its options and gets the logs back. */
static CUresult load_jit(CUmodule *module, const void *image, const nvcu_jit *jit) {
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  double t0 = nvcu_now_ms();
  NVCU_LOCK();
  nvcu_device *d;
  int index;
  CUresult r = nvcu_current(&d, &index);
  struct CUmod_st *m = r ? NULL : calloc(1, sizeof *m);
  if (!r && !m) r = CUDA_ERROR_OUT_OF_MEMORY;
  void *code = NULL;
  size_t size = 0;
  int is_ptx = 0;
  if (!r) r = image_code(d, image, &code, &size, &is_ptx);
  if (!r && is_ptx)
    r = nvcu_status(nvhcq_module_load_any(d->dev, code, size, jit ? jit->opts : NULL,
                                          jit ? jit->n : 0, &m->mod),
                    "compiling PTX");
  else if (!r)
    r = nvcu_status(nvhcq_module_load(d->dev, code, size, &m->mod), "loading a module");
  free(code);
  if (jit) nvcu_jit_report(jit, "", r ? nvhcq_last_error() : "", nvcu_now_ms() - t0);
  if (r) {
    free(m);
  } else {
    m->magic = NVCU_MOD_MAGIC;
    m->device = index;
    *module = m;
  }
  NVCU_UNLOCK();
  return r;
}

static CUresult load(CUmodule *module, const void *image) {
  return load_jit(module, image, NULL);
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  return load(module, image);
}

/* The options reach the PTX compile (a cubin ignores them, as libcuda's loader does). */
static CUresult load_with_options(CUmodule *module, const void *image, unsigned int n,
                                  CUjit_option *options, void **values) {
  nvcu_jit jit;
  CUresult r = nvcu_jit_parse(n, options, values, &jit);
  return r ? r : load_jit(module, image, &jit);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues) {
  return load_with_options(module, image, numOptions, options, optionValues);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) {
  return load(module, fatCubin);
}

/* A whole file, with a zero byte after it (PTX is text). */
static CUresult read_file(const char *path, char **out, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *data = n > 0 ? calloc(1, (size_t)n + 1) : NULL;
  CUresult r =
      data && fread(data, 1, (size_t)n, f) == (size_t)n ? CUDA_SUCCESS : CUDA_ERROR_FILE_NOT_FOUND;
  fclose(f);
  if (r) free(data);
  *out = r ? NULL : data;
  *size = r ? 0 : (size_t)n;
  return r;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname) {
  if (!fname) return CUDA_ERROR_INVALID_VALUE;
  char *data = NULL;
  size_t n;
  CUresult r = read_file(fname, &data, &n);
  if (!r) r = load(module, data);
  free(data);
  return r;
}

CUresult cuModuleUnload(CUmodule hmod) {
  if (mod_check(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  CUresult r = nvcu_status(nvhcq_module_unload(hmod->mod), "cuModuleUnload");
  for (uint32_t i = 0; i < hmod->func_count; i++) {
    hmod->funcs[i]->magic = 0;
    free(hmod->funcs[i]->params);
    free(hmod->funcs[i]->legacy_args);
    free(hmod->funcs[i]->name);
    free(hmod->funcs[i]);
  }
  free(hmod->funcs);
  hmod->magic = 0;
  free(hmod);
  NVCU_UNLOCK();
  return r;
}

static CUresult new_function(CUmodule m, const char *name, nvhcq_kernel *k, CUfunction *out) {
  struct CUfunc_st *f = calloc(1, sizeof *f);
  struct CUfunc_st **funcs = realloc(m->funcs, (m->func_count + 1) * sizeof *funcs);
  if (funcs) m->funcs = funcs;
  if (!f || !funcs || !(f->name = strdup(name))) {
    free(f);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *f = (struct CUfunc_st){
      .magic = NVCU_FUNC_MAGIC, .mod = m, .k = k, .name = f->name, .carveout = -1};
  f->info.struct_size = sizeof f->info;
  CUresult r = nvcu_status(nvhcq_kernel_query_info(k, &f->info), name);
  /* CUDA's default: static and dynamic shared memory within 48 KiB until the client opts in */
  f->max_dynamic_shared =
      f->info.shared_bytes < 48 * 1024 ? 48 * 1024 - (int)f->info.shared_bytes : 0;
  if (!r) r = read_params(f);
  if (r) {
    free(f->name);
    free(f);
    return r;
  }
  m->funcs[m->func_count++] = f;
  *out = f;
  return CUDA_SUCCESS;
}

/* The module's handle for kernel `name`, made at its first lookup (the caller holds the lock). */
static CUresult function_locked(CUmodule hmod, const char *name, CUfunction *hfunc) {
  *hfunc = NULL;
  for (uint32_t i = 0; i < hmod->func_count; i++)
    if (!strcmp(hmod->funcs[i]->name, name)) *hfunc = hmod->funcs[i];
  if (*hfunc) return CUDA_SUCCESS;
  nvhcq_kernel *k;
  CUresult r = nvcu_status(nvhcq_module_get_kernel(hmod->mod, name, &k), "cuModuleGetFunction");
  return r ? r : new_function(hmod, name, k, hfunc);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
  if (mod_check(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  CUresult r = function_locked(hmod, name, hfunc);
  NVCU_UNLOCK();
  return r;
}

CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (mod_check(mod)) return CUDA_ERROR_INVALID_HANDLE;
  *count = nvhcq_module_kernel_count(mod->mod);
  return CUDA_SUCCESS;
}

/* The first numFunctions kernels, each as the handle lookups by name give, in NVIDIA's order: the
 * reverse of the cubin's (nvcc writes the source's last kernel first, and NVIDIA's library lists
 * them in source order; cuda_facts, driver 580). */
CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
                                    CUmodule mod) {
  if (!functions) return CUDA_ERROR_INVALID_VALUE;
  if (mod_check(mod)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  uint32_t n = nvhcq_module_kernel_count(mod->mod);
  CUresult r = CUDA_SUCCESS;
  for (uint32_t i = 0; !r && i < n && i < numFunctions; i++)
    r = function_locked(mod, nvhcq_module_kernel_name(mod->mod, n - 1 - i), &functions[i]);
  NVCU_UNLOCK();
  return r;
}

/* nvhcq uploads every kernel of a module when it loads. */
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_check_init();
  if (!r) *mode = CU_MODULE_EAGER_LOADING;
  return r;
}

CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc) {
  if (!hmod) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *hmod = hfunc->mod;
  return CUDA_SUCCESS;
}

CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function) {
  if (!state) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check(function)) return CUDA_ERROR_INVALID_HANDLE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction function) {
  return nvcu_func_check(function);
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (mod_check(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  uint64_t address = 0;
  size_t size = 0;
  CUresult r =
      nvcu_status(nvhcq_module_get_global(hmod->mod, name, &address, &size), "cuModuleGetGlobal");
  if (!r && dptr) *dptr = address;
  if (!r && bytes) *bytes = size;
  NVCU_UNLOCK();
  return r;
}

/* ---- libraries: a library is a module, a kernel is a function ---- */

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions) {
  (void)libraryOptions, (void)libraryOptionValues;
  if (numLibraryOptions)
    nvcu_note("cuLibraryLoadData: %u library options ignored", numLibraryOptions);
  return load_with_options((CUmodule *)library, code, numJitOptions, jitOptions, jitOptionsValues);
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions) {
  if (!library || !fileName) return CUDA_ERROR_INVALID_VALUE;
  size_t n = 0;
  char *data = NULL;
  CUresult r = read_file(fileName, &data, &n);
  if (!r)
    r = cuLibraryLoadData(library, data, jitOptions, jitOptionsValues, numJitOptions,
                          libraryOptions, libraryOptionValues, numLibraryOptions);
  free(data);
  return r;
}

CUresult cuLibraryUnload(CUlibrary library) {
  return cuModuleUnload((CUmodule)library);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  return cuModuleGetFunction((CUfunction *)pKernel, (CUmodule)library, name);
}

CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib) {
  return cuModuleGetFunctionCount(count, (CUmodule)lib);
}

CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib) {
  return cuModuleEnumerateFunctions((CUfunction *)kernels, numKernels, (CUmodule)lib);
}

CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel) {
  return cuFuncGetModule((CUmodule *)pLib, (CUfunction)kernel);
}

/* Libraries loaded here hold no host functions (no
 * CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE is kept): every name is unknown, as libcuda
 * answers for a library without that table. */
CUresult cuLibraryGetUnifiedFunction(void **fptr, CUlibrary library, const char *symbol) {
  if (!fptr || !symbol) return CUDA_ERROR_INVALID_VALUE;
  if (mod_check((CUmodule)library)) return CUDA_ERROR_INVALID_HANDLE;
  *fptr = NULL;
  return CUDA_ERROR_NOT_FOUND;
}

/* nvhcq's cubin reader does not tell __managed__ variables apart: none is found. */
CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                             const char *name) {
  (void)dptr, (void)bytes;
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (mod_check((CUmodule)library)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_log("cuLibraryGetManaged(%s): managed variables are not supported", name);
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library) {
  if (!pMod) return CUDA_ERROR_INVALID_VALUE;
  if (mod_check((CUmodule)library)) return CUDA_ERROR_INVALID_HANDLE;
  *pMod = (CUmodule)library;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
  return cuModuleGetGlobal_v2(dptr, bytes, (CUmodule)library, name);
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  if (!pFunc) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check((CUfunction)kernel)) return CUDA_ERROR_INVALID_HANDLE;
  *pFunc = (CUfunction)kernel;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc) {
  return cuFuncGetName(name, (CUfunction)hfunc);
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *name = hfunc->name;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                            size_t *paramSize) {
  if (nvcu_func_check(func)) return CUDA_ERROR_INVALID_HANDLE;
  if (paramIndex >= func->param_count) return CUDA_ERROR_INVALID_VALUE;
  if (paramOffset) *paramOffset = func->params[paramIndex].offset;
  if (paramSize) *paramSize = func->params[paramIndex].size;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                              size_t *paramSize) {
  return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset, paramSize);
}

/* ---- attributes ---- */

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  const nvhcq_kernel_info *k = &hfunc->info;
  nvcu_device *d;
  NVCU_LOCK();
  CUresult r = nvcu_device_get(hfunc->mod->device, &d);
  NVCU_UNLOCK();
  if (r) return r;
  unsigned sm = (d->info.sm_version >> 8) * 10 + ((d->info.sm_version >> 4) & 0xf);
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *pi = (int)k->max_threads;
    break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    *pi = (int)k->shared_bytes;
    break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    *pi = (int)k->constant_bytes;
    break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    *pi = (int)k->local_bytes;
    break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *pi = (int)k->registers;
    break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    *pi = (int)k->ptx_sm;
    break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
    *pi = (int)sm;
    break;
  case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    *pi = 0;
    break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *pi = hfunc->max_dynamic_shared;
    break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    *pi = hfunc->carveout;
    break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    *pi = (int)k->cluster.x;
    break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    *pi = (int)k->cluster.y;
    break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    *pi = (int)k->cluster.z;
    break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    *pi = 0;
    break;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: {
    int64_t v = 0;
    nvhcq_kernel_get_attribute(hfunc->k, NVHCQ_KERNEL_NON_PORTABLE_CLUSTER, &v);
    *pi = (int)v;
    break;
  }
  default:
    *pi = 0; /* the cluster scheduling preference: the default */
    break;
  }
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  if (nvcu_func_check(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    if (value < 0 || (uint32_t)value > hfunc->info.max_dynamic_shared) {
      nvcu_log("%s: %d bytes of dynamic shared memory asked, at most %u possible", hfunc->name,
               value, hfunc->info.max_dynamic_shared);
      return CUDA_ERROR_INVALID_VALUE;
    }
    hfunc->max_dynamic_shared = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: {
    NVCU_LOCK();
    CUresult r = nvcu_status(
        nvhcq_kernel_set_attribute(hfunc->k, NVHCQ_KERNEL_CARVEOUT_PREFERENCE, value), hfunc->name);
    NVCU_UNLOCK();
    if (!r) hfunc->carveout = value;
    return r;
  }
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: {
    NVCU_LOCK();
    CUresult r = nvcu_status(
        nvhcq_kernel_set_attribute(hfunc->k, NVHCQ_KERNEL_NON_PORTABLE_CLUSTER, value != 0),
        hfunc->name);
    NVCU_UNLOCK();
    return r;
  }
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    return CUDA_SUCCESS; /* given per launch (cuLaunchKernelEx) */
  default:
    return nvcu_unsupported("cuFuncSetAttribute of this attribute");
  }
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  (void)config; /* a hint: nvhcq chooses the carveout from occupancy */
  return nvcu_func_check(hfunc);
}

/* A hint as cuFuncSetCacheConfig's, for one device: nvhcq picks every launch's carveout. */
CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  CUresult r = nvcu_func_check((CUfunction)kernel);
  if (r) return r;
  if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL) {
    nvcu_log("cuKernelSetCacheConfig: %d is not a CU_FUNC_CACHE_PREFER_* value", (int)config);
    return CUDA_ERROR_INVALID_VALUE;
  }
  int count = 0;
  r = cuDeviceGetCount(&count);
  if (!r && (dev < 0 || dev >= count)) r = CUDA_ERROR_INVALID_DEVICE;
  return r;
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  (void)dev;
  return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  (void)dev;
  return cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

/* ---- occupancy ---- */

static CUresult blocks_per_sm(CUfunction f, int block, size_t shared, int *out) {
  if (nvcu_func_check(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (block <= 0) return CUDA_ERROR_INVALID_VALUE;
  /* More than the function's MAX_DYNAMIC_SHARED_SIZE_BYTES cannot be launched: no blocks, as
   * NVIDIA's library answers (cuda_facts, driver 580). */
  if (shared > (size_t)f->max_dynamic_shared) {
    *out = 0;
    return CUDA_SUCCESS;
  }
  nvhcq_occupancy o = {.struct_size = sizeof o};
  NVCU_LOCK();
  nvhcq_status s =
      nvhcq_kernel_query_occupancy(f->k, (nvhcq_dim3){(uint32_t)block, 1, 1}, (uint32_t)shared, &o);
  NVCU_UNLOCK();
  if (s == NVHCQ_ERROR_LAUNCH_CHECK || s == NVHCQ_ERROR_INVALID_ARGUMENT) {
    *out = 0; /* a shape that cannot run at all has no blocks */
    return CUDA_SUCCESS;
  }
  if (s) return nvcu_status(s, "occupancy");
  *out = (int)o.blocks_per_sm;
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize) {
  if (!numBlocks) return CUDA_ERROR_INVALID_VALUE;
  return blocks_per_sm(func, blockSize, dynamicSMemSize, numBlocks);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                              int blockSize, size_t dynamicSMemSize,
                                                              unsigned int flags) {
  (void)flags;
  return cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize);
}

/* The block size (a multiple of 32) with the most resident threads per SM, the largest of
 * equals; the grid that fills every SM with it. */
CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                          size_t dynamicSMemSize, int blockSizeLimit) {
  if (!minGridSize || !blockSize) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check(func)) return CUDA_ERROR_INVALID_HANDLE;
  int limit = (int)func->info.max_threads;
  if (blockSizeLimit > 0 && blockSizeLimit < limit) limit = blockSizeLimit;
  int best = 0, best_threads = -1, best_blocks = 0;
  for (int b = 32; b <= limit; b += 32) {
    size_t shared = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(b) : dynamicSMemSize;
    int n = 0;
    CUresult r = blocks_per_sm(func, b, shared, &n);
    if (r) return r;
    if (n * b >= best_threads && n > 0) best = b, best_threads = n * b, best_blocks = n;
  }
  nvcu_device *d;
  NVCU_LOCK();
  CUresult r = nvcu_device_get(func->mod->device, &d);
  NVCU_UNLOCK();
  if (r) return r;
  *blockSize = best;
  *minGridSize = best_blocks * (int)d->info.sm_count;
  return CUDA_SUCCESS;
}

/* The flag only says whether a kernel's cache preference may change the answer; nvhcq's does
 * not (the carveout is chosen for the launch shape), so both flags answer the same. */
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize,
                                                   CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit,
                                                   unsigned int flags) {
  if (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) return CUDA_ERROR_INVALID_VALUE;
  return cuOccupancyMaxPotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                          dynamicSMemSize, blockSizeLimit);
}

CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
                                      const CUlaunchConfig *config) {
  if (!numClusters || !config) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check(func)) return CUDA_ERROR_INVALID_HANDLE;
  nvhcq_launch_config c;
  int cooperative;
  CUresult r = nvcu_launch_config(config, &c, &cooperative);
  if (r) return r;
  uint32_t n = 0;
  NVCU_LOCK();
  r = nvcu_status(nvhcq_kernel_query_max_clusters(func->k, &c, &n), "cuOccupancyMaxActiveClusters");
  NVCU_UNLOCK();
  if (!r) *numClusters = (int)n;
  return r;
}

/* The most clusters of `blocks` blocks (x only) of the config's block shape and shared memory that
 * can be resident at once; blocks 0: the kernel's compiled cluster. */
static CUresult clusters_of(CUfunction func, const nvhcq_launch_config *c, uint32_t blocks,
                            uint32_t *n) {
  nvhcq_launch_config one = *c;
  one.cluster = (nvhcq_dim3){blocks, blocks ? 1 : 0, blocks ? 1 : 0};
  NVCU_LOCK();
  nvhcq_status s = nvhcq_kernel_query_max_clusters(func->k, &one, n);
  NVCU_UNLOCK();
  return nvcu_status(s, "cuOccupancyMaxPotentialClusterSize");
}

/* The largest cluster that fits: the compiled one if the kernel has one (0 when even one cannot
 * be resident), else the largest size up to 8 (16 with NON_PORTABLE_CLUSTER_SIZE_ALLOWED, no
 * more than __launch_bounds__ allow) of which one cluster can be resident. */
CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func,
                                            const CUlaunchConfig *config) {
  if (!clusterSize || !config) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_func_check(func)) return CUDA_ERROR_INVALID_HANDLE;
  nvhcq_launch_config c;
  int cooperative;
  CUresult r = nvcu_launch_config(config, &c, &cooperative);
  if (r) return r;
  const nvhcq_kernel_info *k = &func->info;
  uint32_t n = 0, fixed = k->cluster.x * k->cluster.y * k->cluster.z;
  if (fixed) {
    r = clusters_of(func, &c, 0, &n);
    if (!r) *clusterSize = n ? (int)fixed : 0;
    return r;
  }
  int64_t non_portable = 0;
  nvhcq_kernel_get_attribute(func->k, NVHCQ_KERNEL_NON_PORTABLE_CLUSTER, &non_portable);
  uint32_t size = non_portable ? 16 : 8;
  if (k->max_cluster_blocks && k->max_cluster_blocks < size) size = k->max_cluster_blocks;
  for (; size > 0; size--) {
    r = clusters_of(func, &c, size, &n);
    if (r || n) break;
  }
  if (!r) *clusterSize = (int)size;
  return r;
}

CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
                                                 int numBlocks, int blockSize) {
  if (!dynamicSmemSize || numBlocks <= 0) return CUDA_ERROR_INVALID_VALUE;
  int n = 0, per_sm = 0;
  CUresult r = blocks_per_sm(func, blockSize, 0, &n);
  if (!r)
    r = cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                             func->mod->device);
  if (r) return r;
  /* NVIDIA's rule, read from its answers (cuda_facts on an H100, driver 580): the SM's shared
   * memory split numBlocks ways, less the declared static size, without the 1 KiB per-block
   * reserve; within MAX_DYNAMIC_SHARED_SIZE_BYTES (48 KiB until raised). 0 when the blocks do not
   * fit for other reasons (threads, registers). Split sizes are taken in the SM's 128-byte unit. */
  size_t share = ((size_t)per_sm / (size_t)numBlocks) & ~(size_t)127;
  size_t most = share > func->info.shared_bytes ? share - func->info.shared_bytes : 0;
  if (most > (size_t)func->max_dynamic_shared) most = (size_t)func->max_dynamic_shared;
  *dynamicSmemSize = n >= numBlocks ? most : 0;
  return CUDA_SUCCESS;
}
