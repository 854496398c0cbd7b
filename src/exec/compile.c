/* Run-time compilation: finds and loads NVRTC and nvJitLink, tells cubins, PTX and CUDA C apart,
 * compiles, and keeps the cubins in an on-disk cache whose entries are checked by SHA-256. */
#include "exec/compile.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/sha256.h"
#include "util/abi.h"

/* ---- finding and loading the compilers ---- */

typedef int (*fn)();

typedef struct compiler {
  const char *what;         /* "NVRTC" */
  const char *env;          /* variable naming the library */
  const char *const *names; /* sonames, newest first */
  const char *const *symbols;
  fn f[16];
  void *lib;
  char path[512];
  char version[32];
  char tried[1024]; /* for the message when nothing was found */
} compiler;

static const char *const nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
static const char *const nvrtc_symbols[] = {"nvrtcCreateProgram",
                                            "nvrtcCompileProgram",
                                            "nvrtcGetProgramLogSize",
                                            "nvrtcGetProgramLog",
                                            "nvrtcGetCUBINSize",
                                            "nvrtcGetCUBIN",
                                            "nvrtcDestroyProgram",
                                            "nvrtcVersion",
                                            "nvrtcGetNumSupportedArchs",
                                            "nvrtcGetSupportedArchs",
                                            "nvrtcGetPTXSize",
                                            "nvrtcGetPTX",
                                            NULL};
enum {
  RTC_CREATE,
  RTC_COMPILE,
  RTC_LOGSIZE,
  RTC_LOG,
  RTC_CUBINSIZE,
  RTC_CUBIN,
  RTC_DESTROY,
  RTC_VERSION,
  RTC_NUMARCHS,
  RTC_ARCHS,
  RTC_PTXSIZE,
  RTC_PTX
};

static const char *const jit_names[] = {"libnvJitLink.so.13", "libnvJitLink.so.12",
                                        "libnvJitLink.so", NULL};
static const char *const jit_symbols[] = {"nvJitLinkCreate",         "nvJitLinkAddData",
                                          "nvJitLinkComplete",       "nvJitLinkGetLinkedCubinSize",
                                          "nvJitLinkGetLinkedCubin", "nvJitLinkGetErrorLogSize",
                                          "nvJitLinkGetErrorLog",    "nvJitLinkDestroy",
                                          "nvJitLinkVersion",        "nvJitLinkGetInfoLogSize",
                                          "nvJitLinkGetInfoLog",     NULL};
enum {
  JIT_CREATE,
  JIT_ADD,
  JIT_COMPLETE,
  JIT_CUBINSIZE,
  JIT_CUBIN,
  JIT_LOGSIZE,
  JIT_LOG,
  JIT_DESTROY,
  JIT_VERSION,
  JIT_INFOSIZE,
  JIT_INFO
};

static compiler nvrtc = {"NVRTC", "NVHCQ_NVRTC", nvrtc_names, nvrtc_symbols, {0}, 0, "", "", ""};
static compiler nvjitlink = {"nvJitLink", "NVHCQ_NVJITLINK", jit_names, jit_symbols, {0}, 0, "", "",
                             ""};
static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;
static nvhcq_compile_stats stats;

static int try_open(compiler *c, const char *path) {
  size_t n = strlen(c->tried);
  if (n < sizeof c->tried - 2)
    snprintf(c->tried + n, sizeof c->tried - n, "%s%s", n ? ", " : "", path);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  for (int i = 0; c->symbols[i]; i++)
    if (!(c->f[i] = (fn)dlsym(lib, c->symbols[i]))) {
      dlclose(lib);
      return 0;
    }
  c->lib = lib;
  snprintf(c->path, sizeof c->path, "%s", path);
  return 1;
}

static int try_dir(compiler *c, const char *dir) {
  char path[512];
  for (int i = 0; c->names[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, c->names[i]);
    if (access(path, R_OK) == 0 && try_open(c, path)) return 1;
  }
  return 0;
}

/* /usr/local/cuda-X.Y/lib64, newest version first. */
static int try_versioned_dirs(compiler *c) {
  DIR *d = opendir("/usr/local");
  if (!d) return 0;
  char best[16][64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 16)
    if (!strncmp(e->d_name, "cuda-", 5)) snprintf(best[n++], sizeof best[0], "%.60s", e->d_name);
  closedir(d);
  for (int i = 0; i < n; i++) /* versions compare as numbers: sort descending by strverscmp */
    for (int j = i + 1; j < n; j++)
      if (strverscmp(best[i], best[j]) < 0) {
        char t[64];
        memcpy(t, best[i], 64), memcpy(best[i], best[j], 64), memcpy(best[j], t, 64);
      }
  for (int i = 0; i < n; i++) {
    char dir[128];
    snprintf(dir, sizeof dir, "/usr/local/%s/lib64", best[i]);
    if (try_dir(c, dir)) return 1;
  }
  return 0;
}

static nvhcq_status load_compiler(compiler *c) {
  if (c->lib) return NVHCQ_SUCCESS;
  c->tried[0] = '\0';
  const char *forced = getenv(c->env);
  int found = 0;
  if (forced && *forced) {
    found = try_open(c, forced);
  } else {
    const char *roots[] = {getenv("CUDA_PATH"), getenv("CUDA_HOME"), "/usr/local/cuda"};
    for (int i = 0; i < 3 && !found; i++) {
      if (!roots[i] || !*roots[i]) continue;
      char dir[512];
      snprintf(dir, sizeof dir, "%s/lib64", roots[i]);
      found = try_dir(c, dir);
    }
    if (!found) found = try_versioned_dirs(c);
    for (int i = 0; c->names[i] && !found; i++) found = try_open(c, c->names[i]); /* loader path */
  }
  if (!found)
    return nvhcq_fail(
        NVHCQ_ERROR_NOT_FOUND,
        "%s is needed to compile %s but was not found (tried: %s). Install the CUDA "
        "toolkit, or point nvhcq at the library with %s=/path/to/%s or at the toolkit "
        "with CUDA_PATH",
        c->what, c == &nvrtc ? "CUDA C" : "PTX or link device code", c->tried, c->env, c->names[0]);
  int major = 0, minor = 0;
  if (c == &nvrtc)
    c->f[RTC_VERSION](&major, &minor);
  else
    c->f[JIT_VERSION](&major, &minor);
  snprintf(c->version, sizeof c->version, "%d.%d", major, minor);
  return NVHCQ_SUCCESS;
}

/* ---- what a buffer holds ---- */

nvhcq_source_kind nvhcq_source_detect(const void *data, size_t size) {
  const char *p = data;
  if (!p || size == 0) return NVHCQ_SOURCE_UNKNOWN;
  if (size >= 4 && !memcmp(p,
                           "\x7f"
                           "ELF",
                           4))
    return NVHCQ_SOURCE_CUBIN;
  /* PTX opens with comments and then .version and .target directives. */
  size_t i = 0;
  while (i < size) {
    while (i < size && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
    if (i + 1 < size && p[i] == '/' && p[i + 1] == '/') {
      while (i < size && p[i] != '\n') i++;
      continue;
    }
    if (i + 1 < size && p[i] == '/' && p[i + 1] == '*') {
      const char *end = NULL;
      for (size_t j = i + 2; j + 1 < size; j++)
        if (p[j] == '*' && p[j + 1] == '/') {
          end = p + j + 2;
          break;
        }
      if (!end) return NVHCQ_SOURCE_CUDA;
      i = (size_t)(end - p);
      continue;
    }
    break;
  }
  if (size - i >= 8 && !memcmp(p + i, ".version", 8)) return NVHCQ_SOURCE_PTX;
  for (size_t j = 0; j < size; j++)
    if (p[j] == '\0') return NVHCQ_SOURCE_UNKNOWN; /* binary that is not ELF */
  return NVHCQ_SOURCE_CUDA;
}

/* ---- the cache ---- */

#define CACHE_MAGIC "NVHCQC1\n"

static int cache_enabled(void) {
  const char *env = getenv("NVHCQ_CACHE");
  return !(env && !strcmp(env, "0"));
}

static char cache_path_buf[512];

const char *nvhcq_cache_dir(void) {
  if (!cache_enabled()) return "";
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg)
    snprintf(cache_path_buf, sizeof cache_path_buf, "%s/nvhcq", xdg);
  else if (home && *home)
    snprintf(cache_path_buf, sizeof cache_path_buf, "%s/.cache/nvhcq", home);
  else
    return "";
  return cache_path_buf;
}

/* Creates the directory and its parent with private permissions; refuses a symlink. */
static int ensure_dir(const char *dir) {
  char parent[512];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) {
    *slash = '\0';
    mkdir(parent, 0700);
  }
  if (mkdir(dir, 0700) && errno != EEXIST) return 0;
  struct stat st;
  return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid();
}

static void cache_key(char hex[65], nvhcq_source_kind kind, const char *arch, const char *version,
                      const char *const *options, int num_options, const void *src, size_t size) {
  nvhcq_sha256 h;
  nvhcq_sha256_init(&h);
  char head[128];
  int n =
      snprintf(head, sizeof head, "nvhcq-cache-1|%d|%s|%s|%d", kind, arch, version, num_options);
  nvhcq_sha256_update(&h, head, (size_t)n + 1);
  for (int i = 0; i < num_options; i++) nvhcq_sha256_update(&h, options[i], strlen(options[i]) + 1);
  nvhcq_sha256_update(&h, src, size);
  uint8_t d[32];
  nvhcq_sha256_final(&h, d);
  nvhcq_sha256_hex(d, hex);
}

/* An entry: magic, payload size (8 bytes), SHA-256 of the payload, payload. Anything else is
 * ignored and recompiled, never loaded. */
static int cache_read(const char *path, void **out, size_t *out_size) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  uint8_t header[8 + 8 + 32];
  void *data = NULL;
  int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof header &&
           read(fd, header, sizeof header) == (ssize_t)sizeof header &&
           !memcmp(header, CACHE_MAGIC, 8);
  uint64_t n = 0;
  if (ok) {
    memcpy(&n, header + 8, 8);
    ok = n == (uint64_t)st.st_size - sizeof header && n > 0 && (data = malloc(n)) &&
         read(fd, data, n) == (ssize_t)n;
  }
  close(fd);
  if (ok) {
    uint8_t d[32];
    nvhcq_sha256_of(data, n, d);
    ok = !memcmp(d, header + 16, 32);
  }
  if (!ok) {
    free(data);
    if (access(path, F_OK) == 0) stats.cache_rejects++;
    return 0;
  }
  *out = data;
  *out_size = n;
  return 1;
}

/* Written to a private temporary file, then renamed into place: readers see all or nothing. */
static void cache_write(const char *dir, const char *path, const void *data, size_t size) {
  if (!ensure_dir(dir)) return;
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
  int fd = mkstemp(tmp);
  if (fd < 0) return;
  uint8_t header[8 + 8 + 32];
  uint64_t n = size;
  memcpy(header, CACHE_MAGIC, 8);
  memcpy(header + 8, &n, 8);
  nvhcq_sha256_of(data, size, header + 16);
  int ok = fchmod(fd, 0600) == 0 && write(fd, header, sizeof header) == (ssize_t)sizeof header &&
           write(fd, data, size) == (ssize_t)size && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

/* ---- compiling ---- */

static int has_arch_option(const char *const *options, int n) {
  for (int i = 0; i < n; i++)
    if (!strncmp(options[i], "-arch", 5) || !strncmp(options[i], "--gpu-architecture", 18))
      return 1;
  return 0;
}

/* The toolkit's include directory beside the NVRTC that was loaded (lib64/../include), so that
 * <cuda_fp16.h> and friends resolve; NVRTC has no search path of its own. */
static int toolkit_include(char *opt, size_t size) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s", nvrtc.path);
  char *slash = strrchr(dir, '/');
  if (!slash) return 0;
  *slash = '\0';
  size_t n = strlen(dir);
  if (n < 6 || strcmp(dir + n - 6, "/lib64")) return 0;
  snprintf(dir + n - 6, sizeof dir - n + 6, "/include");
  if (access(dir, R_OK) != 0) return 0;
  snprintf(opt, size, "--include-path=%s", dir);
  return 1;
}

/* A compiler's log (size call, then copy call on handle `h`): malloc'd, or NULL. */
static char *take_log(fn size_of, fn copy, void *h) {
  size_t size = 0;
  size_of(h, &size);
  char *log = malloc(size + 1);
  if (log) log[0] = '\0', copy(h, log);
  return log;
}

/* A compiler's cubin, the same way, into a buffer the caller frees. */
static nvhcq_status take_cubin(fn size_of, fn copy, void *h, void **bin, size_t *bin_size) {
  size_of(h, bin_size);
  *bin = malloc(*bin_size ? *bin_size : 1);
  if (!*bin) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  copy(h, *bin);
  return NVHCQ_SUCCESS;
}

/* CUDA C to a cubin for arch (sm_XX), or with `ptx` to PTX for it (arch then compute_XX). */
static nvhcq_status nvrtc_run(const char *src, size_t size, const char *arch,
                              const char *const *options, int num_options, int ptx, void **bin,
                              size_t *bin_size) {
  char *source = malloc(size + 1);
  const char **opts = calloc((size_t)num_options + 3, sizeof *opts);
  if (!source || !opts)
    return free(source), free(opts), nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  memcpy(source, src, size);
  source[size] = '\0';
  char arch_opt[64], include_opt[600];
  int n = 0;
  if (!has_arch_option(options, num_options)) {
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    opts[n++] = arch_opt;
  }
  if (toolkit_include(include_opt, sizeof include_opt)) opts[n++] = include_opt;
  for (int i = 0; i < num_options; i++) opts[n++] = options[i];
  void *prog = NULL;
  int r = nvrtc.f[RTC_CREATE](&prog, source, "kernel.cu", 0, NULL, NULL);
  nvhcq_status s = NVHCQ_SUCCESS;
  if (r) s = nvhcq_fail(NVHCQ_ERROR_COMPILE, "NVRTC could not start a program (error %d)", r);
  if (!s) {
    stats.compiles++;
    r = nvrtc.f[RTC_COMPILE](prog, n, opts);
    char *log = take_log(nvrtc.f[RTC_LOGSIZE], nvrtc.f[RTC_LOG], prog);
    if (r)
      s = nvhcq_fail(NVHCQ_ERROR_COMPILE, "CUDA C did not compile for %s (NVRTC %s):\n%s", arch,
                     nvrtc.version, log ? log : "(no log)");
    free(log);
  }
  if (!s && ptx)
    s = take_cubin(nvrtc.f[RTC_PTXSIZE], nvrtc.f[RTC_PTX], prog, bin, bin_size);
  else if (!s) {
    s = take_cubin(nvrtc.f[RTC_CUBINSIZE], nvrtc.f[RTC_CUBIN], prog, bin, bin_size);
    if (!s && *bin_size == 0)
      s = nvhcq_fail(NVHCQ_ERROR_COMPILE,
                     "NVRTC produced no cubin for %s (a virtual architecture?)", arch);
  }
  if (prog) nvrtc.f[RTC_DESTROY](&prog);
  free(source);
  free(opts);
  return s;
}

static nvhcq_status nvrtc_compile(const char *src, size_t size, const char *arch,
                                  const char *const *options, int num_options, void **bin,
                                  size_t *bin_size) {
  return nvrtc_run(src, size, arch, options, num_options, 0, bin, bin_size);
}

/* nvJitLink assembles PTX as relocatable code, which ptxas refuses below PTX ISA 3.1 ("'Compile
 * only(-c)' requires PTX ISA .version 3.1 or later", nvJitLink 13.0), while libcuda's JIT takes
 * such PTX whole (cuda-samples' matrixMulDynlinkJIT embeds .version 1.4, .target sm_10). Such PTX
 * is given to nvJitLink as 3.1: the .target directive, not the version, selects the sm_1x
 * semantics, and PTX 3.1 is a superset of the earlier ISAs. *copy: the text to assemble instead
 * (to be freed), or NULL to take the input as it is. */
static nvhcq_status ptx_for_linking(const char *ptx, size_t size, char **copy) {
  *copy = NULL;
  const char *v = NULL;
  for (size_t i = 0; i + 10 < size && !v; i++)
    if ((i == 0 || ptx[i - 1] == '\n' || ptx[i - 1] == '\t' || ptx[i - 1] == ' ') &&
        !memcmp(ptx + i, ".version ", 9))
      v = ptx + i + 9;
  if (!v || v[0] < '0' || v[0] > '3' || v[1] != '.' || v[2] < '0' || v[2] > '9')
    return NVHCQ_SUCCESS;
  if (v[0] == '3' && v[2] >= '1') return NVHCQ_SUCCESS;
  if (v - ptx + 3 < (ptrdiff_t)size && v[3] >= '0' && v[3] <= '9') return NVHCQ_SUCCESS; /* 2.10? */
  /* nvJitLink reads PTX as a string: the copy ends with a NUL as the input does */
  if (!(*copy = malloc(size + 1)))
    return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  memcpy(*copy, ptx, size);
  (*copy)[size] = '\0';
  memcpy(*copy + (v - ptx), "3.1", 3);
  return NVHCQ_SUCCESS;
}

static nvhcq_status jit_compile(const char *ptx, size_t size, const char *arch,
                                const char *const *options, int num_options, void **bin,
                                size_t *bin_size) {
  char *raised;
  NVHCQ_TRY(ptx_for_linking(ptx, size, &raised));
  if (raised) ptx = raised;
  const char **opts = calloc((size_t)num_options + 2, sizeof *opts);
  if (!opts) {
    free(raised);
    return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  char arch_opt[64];
  int n = 0;
  if (!has_arch_option(options, num_options)) {
    snprintf(arch_opt, sizeof arch_opt, "-arch=%s", arch);
    opts[n++] = arch_opt;
  }
  for (int i = 0; i < num_options; i++) opts[n++] = options[i];
  void *h = NULL;
  nvhcq_status s = NVHCQ_SUCCESS;
  if (nvjitlink.f[JIT_CREATE](&h, (uint32_t)n, opts))
    s = nvhcq_fail(NVHCQ_ERROR_COMPILE, "nvJitLink rejected the options for %s", arch);
  stats.compiles++;
  if (!s && (nvjitlink.f[JIT_ADD](h, 2 /* PTX */, ptx, size, "kernel.ptx") ||
             nvjitlink.f[JIT_COMPLETE](h))) {
    char *log = take_log(nvjitlink.f[JIT_LOGSIZE], nvjitlink.f[JIT_LOG], h);
    s = nvhcq_fail(NVHCQ_ERROR_COMPILE, "PTX did not assemble for %s (nvJitLink %s):\n%s", arch,
                   nvjitlink.version, log ? log : "(no log)");
    free(log);
  }
  if (!s) s = take_cubin(nvjitlink.f[JIT_CUBINSIZE], nvjitlink.f[JIT_CUBIN], h, bin, bin_size);
  if (h) nvjitlink.f[JIT_DESTROY](&h);
  free(opts);
  free(raised);
  return s;
}

/* PTX that targets an arch-specific variant (".target sm_90a") is assembled for that variant. */
static void ptx_arch(const char *ptx, size_t size, const char *arch, char *out, size_t out_size) {
  snprintf(out, out_size, "%s", arch);
  for (size_t i = 0; i + 8 < size; i++) {
    if (memcmp(ptx + i, ".target ", 8)) continue;
    char t[16] = "";
    size_t j = 0;
    for (i += 8; i < size && j < sizeof t - 1 && ptx[i] != ',' && ptx[i] != '\n' && ptx[i] != ' ';
         i++)
      t[j++] = ptx[i];
    t[j] = '\0';
    size_t base = strlen(arch);
    if (j == base + 1 && !strncmp(t, arch, base) && t[base] == 'a')
      snprintf(out, out_size, "%s", t);
    return;
  }
}

/* Refuses an architecture the loaded NVRTC cannot target, naming the version that can. */
static nvhcq_status check_supported(const char *arch) {
  int n = 0;
  if (nvrtc.f[RTC_NUMARCHS](&n) || n <= 0 || n > 256) return NVHCQ_SUCCESS;
  int archs[256];
  nvrtc.f[RTC_ARCHS](archs);
  int want = atoi(arch + 3); /* "sm_90a" -> 90 */
  for (int i = 0; i < n; i++)
    if (archs[i] == want) return NVHCQ_SUCCESS;
  static const struct {
    int sm;
    const char *cuda;
  } needs[] = {{80, "11.0"}, {86, "11.1"},  {89, "11.8"},
               {90, "11.8"}, {100, "12.8"}, {120, "12.8"}};
  const char *cuda = "a newer release";
  for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
    if (needs[i].sm == want) cuda = needs[i].cuda;
  return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                    "NVRTC %s (%s) cannot compile for %s (it knows sm_%d to sm_%d); this GPU "
                    "needs CUDA %s or newer",
                    nvrtc.version, nvrtc.path, arch, archs[0], archs[n - 1], cuda);
}

/* Hopper- and Blackwell-only instructions (wgmma, setmaxnreg, ...) exist only on "a" targets:
 * a compile for sm_90 or later that failed over one of them is worth another for the variant. */
int nvhcq_compile_arch_specific_retry(nvhcq_status s, const char *arch, char *specific,
                                      size_t size) {
  const char *m = nvhcq_last_error();
  if (s != NVHCQ_ERROR_COMPILE || arch[strlen(arch) - 1] == 'a' || atoi(arch + 3) < 90 ||
      !(strstr(m, "sm_90a") || strstr(m, "sm_100a") || strstr(m, "wgmma") ||
        strstr(m, "not supported on .target")))
    return 0;
  snprintf(specific, size, "%sa", arch);
  return 1;
}

static nvhcq_status compile_locked(const void *src, size_t size, nvhcq_source_kind kind,
                                   const char *arch_in, const char *const *options, int n,
                                   void **bin, size_t *bin_size) {
  compiler *c = kind == NVHCQ_SOURCE_PTX ? &nvjitlink : &nvrtc;
  NVHCQ_TRY(load_compiler(c));
  char arch[32];
  if (kind == NVHCQ_SOURCE_PTX)
    ptx_arch(src, size, arch_in, arch, sizeof arch);
  else
    snprintf(arch, sizeof arch, "%s", arch_in);
  if (kind == NVHCQ_SOURCE_CUDA && !has_arch_option(options, n)) NVHCQ_TRY(check_supported(arch));
  char key[65], path[700];
  const char *dir = nvhcq_cache_dir();
  cache_key(key, kind, arch, c->version, options, n, src, size);
  snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
  if (*dir && cache_read(path, bin, bin_size)) {
    stats.cache_hits++;
    return NVHCQ_SUCCESS;
  }
  nvhcq_status s = kind == NVHCQ_SOURCE_PTX
                       ? jit_compile(src, size, arch, options, n, bin, bin_size)
                       : nvrtc_compile(src, size, arch, options, n, bin, bin_size);
  char specific[40];
  if (kind == NVHCQ_SOURCE_CUDA && !has_arch_option(options, n) &&
      nvhcq_compile_arch_specific_retry(s, arch, specific, sizeof specific))
    s = nvrtc_compile(src, size, specific, options, n, bin, bin_size);
  if (!s && *dir) cache_write(dir, path, *bin, *bin_size);
  return s;
}

nvhcq_status nvhcq_binary_compile(const void *source, size_t size, const char *arch,
                                  const char *const *options, int num_options, void **binary,
                                  size_t *binary_size) {
  if (!source || !size || !binary || !binary_size || num_options < 0 || (num_options && !options))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_binary_compile: missing source, output or options");
  if (!arch || strncmp(arch, "sm_", 3) || atoi(arch + 3) < 50)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_binary_compile: architecture '%s' should look like sm_90",
                      arch ? arch : "(null)");
  nvhcq_source_kind kind = nvhcq_source_detect(source, size);
  if (kind == NVHCQ_SOURCE_UNKNOWN)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_IMAGE, "the input is neither a cubin, PTX nor CUDA C");
  if (kind == NVHCQ_SOURCE_CUBIN) {
    if (!(*binary = malloc(size)))
      return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    memcpy(*binary, source, size);
    *binary_size = size;
    return NVHCQ_SUCCESS;
  }
  pthread_mutex_lock(&compile_lock);
  nvhcq_status s =
      compile_locked(source, size, kind, arch, options, num_options, binary, binary_size);
  pthread_mutex_unlock(&compile_lock);
  return s;
}

nvhcq_status nvhcq_compile_cuda_to_ptx(const void *source, size_t size, const char *arch,
                                       const char *const *options, int num_options, char **ptx,
                                       size_t *ptx_size) {
  char virtual_arch[32];
  snprintf(virtual_arch, sizeof virtual_arch, "compute_%s", arch + 3);
  pthread_mutex_lock(&compile_lock);
  nvhcq_status s = load_compiler(&nvrtc);
  void *out = NULL;
  if (!s) s = nvrtc_run(source, size, virtual_arch, options, num_options, 1, &out, ptx_size);
  pthread_mutex_unlock(&compile_lock);
  /* NVRTC counts the terminating NUL into the size. */
  while (!s && *ptx_size && ((char *)out)[*ptx_size - 1] == '\0') (*ptx_size)--;
  *ptx = out;
  return s;
}

void nvhcq_binary_destroy(void *binary) {
  free(binary);
}

void nvhcq_compile_get_stats(nvhcq_compile_stats *out) {
  pthread_mutex_lock(&compile_lock);
  *out = stats;
  pthread_mutex_unlock(&compile_lock);
}

/* ---- linking ---- */

#define LINKER_MAGIC 0x6e766c6bu /* "nvlk" */

struct nvhcq_linker {
  uint32_t magic;
  void *h; /* the nvJitLink handle */
  char arch[32];
  char *error_log, *info_log;
  void *cubin;
  size_t cubin_size;
  int completed;
  int failed; /* nvJitLink's error from a failed nvhcq_linker_complete, 0 if none */
};

static nvhcq_status linker_check(const nvhcq_linker *l, const char *what) {
  if (l && l->magic == LINKER_MAGIC) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s: not a linker (NULL or destroyed)", what);
}

/* nvJitLink's logs grow with each call: both are copied again after every one. */
static void linker_take_logs(nvhcq_linker *l) {
  free(l->error_log);
  free(l->info_log);
  l->error_log = take_log(nvjitlink.f[JIT_LOGSIZE], nvjitlink.f[JIT_LOG], l->h);
  l->info_log = take_log(nvjitlink.f[JIT_INFOSIZE], nvjitlink.f[JIT_INFO], l->h);
}

nvhcq_status nvhcq_linker_create(const char *arch, const char *const *options, int num_options,
                                 nvhcq_linker **out) {
  if (!out || num_options < 0 || (num_options && !options))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_linker_create: missing out or options");
  if (!arch || strncmp(arch, "sm_", 3) || atoi(arch + 3) < 50)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_linker_create: architecture '%s' should look like sm_90",
                      arch ? arch : "(null)");
  if (has_arch_option(options, num_options))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_linker_create: give the architecture as `arch`, not as an option");
  pthread_mutex_lock(&compile_lock);
  nvhcq_status s = load_compiler(&nvjitlink);
  pthread_mutex_unlock(&compile_lock);
  NVHCQ_TRY(s);
  nvhcq_linker *l = calloc(1, sizeof *l);
  const char **opts = calloc((size_t)num_options + 1, sizeof *opts);
  if (!l || !opts)
    return free(l), free(opts), nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  snprintf(l->arch, sizeof l->arch, "%s", arch);
  char arch_opt[64];
  snprintf(arch_opt, sizeof arch_opt, "-arch=%s", arch);
  opts[0] = arch_opt;
  for (int i = 0; i < num_options; i++) opts[i + 1] = options[i];
  int r = nvjitlink.f[JIT_CREATE](&l->h, (uint32_t)num_options + 1, opts);
  free(opts);
  if (r) {
    if (l->h) nvjitlink.f[JIT_DESTROY](&l->h);
    free(l);
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvJitLink %s refused the link options for %s (error %d): check each "
                      "option against nvJitLink's documented ones",
                      nvjitlink.version, arch, r);
  }
  l->magic = LINKER_MAGIC;
  *out = l;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_linker_add(nvhcq_linker *l, nvhcq_link_input kind, const void *data, size_t size,
                              const char *name) {
  NVHCQ_TRY(linker_check(l, "nvhcq_linker_add"));
  if (!data || !size || kind < NVHCQ_LINK_CUBIN || kind > NVHCQ_LINK_LIBRARY)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_linker_add: %s (kind %u); give the bytes and an NVHCQ_LINK_* kind",
                      data && size ? "unknown input kind" : "no input", kind);
  if (l->completed)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_linker_add: the link is complete already; create another linker");
  if (kind == NVHCQ_LINK_PTX) size = strnlen(data, size); /* nvJitLink takes the text alone */
  const char *input = name && *name ? name : "input";
  char *raised = NULL;
  if (kind == NVHCQ_LINK_PTX) NVHCQ_TRY(ptx_for_linking(data, size, &raised));
  int r = nvjitlink.f[JIT_ADD](l->h, (int)kind, raised ? raised : data, size, input);
  free(raised);
  linker_take_logs(l);
  if (r)
    return nvhcq_fail(NVHCQ_ERROR_COMPILE,
                      "%s did not go into the link for %s (nvJitLink %s, "
                      "error %d):\n%s",
                      input, l->arch, nvjitlink.version, r,
                      l->error_log && *l->error_log ? l->error_log : "(no log)");
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_linker_complete(nvhcq_linker *l, const void **cubin, size_t *size) {
  NVHCQ_TRY(linker_check(l, "nvhcq_linker_complete"));
  if (!cubin)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_linker_complete: cubin is NULL");
  if (l->failed) /* nvJitLink is not asked twice: the first answer stands */
    return nvhcq_fail(NVHCQ_ERROR_COMPILE, "the link for %s failed (nvJitLink %s, error %d):\n%s",
                      l->arch, nvjitlink.version, l->failed,
                      l->error_log && *l->error_log ? l->error_log : "(no log)");
  if (!l->completed) {
    pthread_mutex_lock(&compile_lock);
    stats.compiles++;
    pthread_mutex_unlock(&compile_lock);
    int r = nvjitlink.f[JIT_COMPLETE](l->h);
    linker_take_logs(l);
    if (r) {
      l->failed = r;
      return nvhcq_fail(NVHCQ_ERROR_COMPILE, "the link for %s failed (nvJitLink %s, error %d):\n%s",
                        l->arch, nvjitlink.version, r,
                        l->error_log && *l->error_log ? l->error_log : "(no log)");
    }
    NVHCQ_TRY(take_cubin(nvjitlink.f[JIT_CUBINSIZE], nvjitlink.f[JIT_CUBIN], l->h, &l->cubin,
                         &l->cubin_size));
    l->completed = 1;
  }
  *cubin = l->cubin;
  if (size) *size = l->cubin_size;
  return NVHCQ_SUCCESS;
}

const char *nvhcq_linker_error_log(const nvhcq_linker *l) {
  if (linker_check(l, "nvhcq_linker_error_log")) return NULL;
  return l->error_log ? l->error_log : "";
}

const char *nvhcq_linker_info_log(const nvhcq_linker *l) {
  if (linker_check(l, "nvhcq_linker_info_log")) return NULL;
  return l->info_log ? l->info_log : "";
}

nvhcq_status nvhcq_linker_destroy(nvhcq_linker *l) {
  if (!l) return NVHCQ_SUCCESS;
  NVHCQ_TRY(linker_check(l, "nvhcq_linker_destroy"));
  l->magic = 0;
  if (l->h) nvjitlink.f[JIT_DESTROY](&l->h);
  free(l->error_log);
  free(l->info_log);
  free(l->cubin);
  free(l);
  return NVHCQ_SUCCESS;
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_detect_source, nvhcq_source_detect);
NVHCQ_0_1_NAME(nvhcq_compile, nvhcq_binary_compile);
NVHCQ_0_1_NAME(nvhcq_free_binary, nvhcq_binary_destroy);
