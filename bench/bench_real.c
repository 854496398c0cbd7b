/* Realistic-kernel benchmark: an elementwise add, a row softmax and an fp16 tensor-core matmul,
 * GPU-timed in nvhcq queues, nvhcq recorded queues and libcuda graphs in one run, outputs checked.
 * usage: nvhcq_bench_real build/bench/real_kernels_sm_90.cubin [KERNEL]
 * (NVHCQ_BENCH_REAL_REPS sets the repeats each figure is the median of; NVHCQ_BENCH_REAL_PLACEMENTS
 * how many placements of the buffers the second table is the median over, 0 for none; with
 * LD_PRELOAD=build/libnvhcq_place_probe.so, NVHCQ_BENCH_REAL_SAME_PAGES=N adds a table over N
 * sets of physical pages both libraries' buffers are put on; NVHCQ_BENCH_REAL_REST the GPU's rest
 * after each timed submission, in multiples of its GPU time) */
#define _GNU_SOURCE /* clock_gettime in bench_util.h */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "nvhcq.h"

#define LAUNCHES     200 /* per timed submission; the figures are per launch */
#define WARMUP       2   /* untimed repeats first: clocks up, caches and TLBs filled */
#define MAX_REPS     1000
#define DEFAULT_REPS 15
/* After each timed submission (warm-up ones too) the GPU idles REST times as long as it worked,
 * on both libraries alike. Without a rest, a kernel's time depends on how hot the GPU is, which
 * is the history of the run, not the library: on an H100 (2026-12-06) 200 matmul_f16 launches took
 * 60.3 us each rested and drifted to 63-75 us in runs that followed others, with nvidia-smi
 * (sampled every 20 ms) showing 691-693 W against a 700 W limit, "SW power cap" and the SM clock
 * down from 1980 to 1725-1770 MHz. The libraries' two ratios over 4 placements were 1.041 and
 * 1.028 without a rest (ranges 60.6-74.6 us) and 0.999 with 50 ms before each submission (60.3-
 * 61.1 us); softmax_rows and ew_add did not move (0.980-0.985 either way). */
#define DEFAULT_REST 4
#define MAX_REST     100

/* A kernel's time depends on where its buffers lie, on both libraries alike: on the H200, ew_add
 * back to back took 2.40 to 2.58 us per launch at 64 placements of its three 4 MiB buffers in one
 * nvhcq allocation, and 2 MiB steps of padding before each buffer moved libcuda's between 2.45
 * and 2.62 us and nvhcq's between 2.44 and 2.56; a single placement compares the libraries' luck
 * as much as their launches. The second table is the median over PLACEMENTS placements, each
 * buffer PLACE_STEP times 0..PLACE_GAPS-1 after the one before it, the same offsets for both
 * libraries. Without the rest (DEFAULT_REST), the run that follows another at one placement was
 * slower on both (matmul_f16: about 61.5 us first, 63-66 us second: the GPU at its power limit),
 * so nvhcq's two kinds of queue take turns going first and libcuda's graph is timed twice at
 * each placement. */
#define DEFAULT_PLACEMENTS 16
#define MAX_PLACEMENTS     64
#define PLACE_STEP         (512u << 10)
#define PLACE_GAPS         8
#define PLACE_REPS         5
/* The third table: each library's own allocator, FRESH rounds of new buffers, round r allocating
 * r 2 MiB buffers first (held through the round), so that each round's buffers land elsewhere. */
#define DEFAULT_FRESH 8
#define MAX_FRESH     32
#define FRESH_PAD     (2u << 20)
/* The fourth table (NVHCQ_BENCH_REAL_SAME_PAGES trials, with bench/place_probe.c preloaded): both
 * libraries' buffers at the same physical addresses, from SAME_BASE on, each trial's buffers in
 * a shuffled order with 0 to 15 free 2 MiB pages before each, no page used twice. */
#define SAME_BASE (4ull << 30)
/* The pages experiment (NVHCQ_BENCH_REAL_PAGES trials, nvhcq only): the buffers are runs of 2 MiB
 * pages of one physical allocation of PAGE_POOL pages, chosen afresh in each trial, mapped at two
 * address layouts in turn: which pages are behind the buffers, apart from where their addresses
 * lie, moves the time. A separate probe on the H200 (2026-12-04, physical memory mapped by hand)
 * agreed: ew_add's three buffers on fixed pages took 2.508-2.528 us at 32 virtual layouts (2 MiB
 * and 64 MiB steps); 21 runs of consecutive pages took 2.484-2.595 us and the same 21 again
 * matched each within 0.013 us; moving only the output's pages gave 2.436-2.649 us; and two page
 * sets run alternately six times kept their own times (2.520-2.526 and 2.458-2.466 us), so no
 * earlier run's state carries over. Which pages each allocator hands out is where a single
 * placement's gap between the libraries comes from: in this benchmark nvhcq's buffers are its
 * device's first allocations (physical 30, 34 and 38 MiB, 2.51 us), libcuda's follow a 414 MiB
 * allocation of its context (528, 532 and 536 MiB, 2.44-2.45 us); NVHCQ_PLACE_PROBE_LOG=1 with
 * the probe preloaded prints every allocation's pages. */
#define PAGE_BYTES (2ull << 20)
#define PAGE_POOL  64

#define EW_N    (1 << 20)
#define SM_ROWS 4096
#define SM_COLS 1000
#define MM_N    2048
/* MM_SHARED_BYTES of real_kernels.cu: two stages of 128x72 and 64x136 halves. */
#define MM_SHARED 71680
#define MM_SAMPLE 64 /* rows and columns of C checked against the CPU */

#define POISON 0xffffffffu /* a NaN no kernel writes: outputs are poisoned with it before runs */

/* One kernel: how it is launched, its buffers (inputs, then the output, as its pointer
 * arguments come), its integer arguments (after the pointers), and how its output is judged. */
typedef struct bench_case {
  const char *name;
  nvhcq_dim3 grid, block;
  uint32_t shared; /* dynamic shared memory bytes */
  int inputs;
  size_t in_bytes, out_bytes;
  int32_t ints[2];
  int int_count;
  double work, per_s; /* bytes or flops per launch, and the rate's scale */
  const char *unit;
  void (*fill)(void *in[2]);
  int (*check)(void *const in[2], const void *out, char *msg, size_t len); /* 1: within bounds */
} bench_case;

/* What a kernel's run gave: per-launch GPU microseconds and the outputs read back. */
typedef struct outcome {
  double cu_us, nv_us, rec_us;
  double place_cu[2 * MAX_PLACEMENTS], place_nv[MAX_PLACEMENTS], place_rec[MAX_PLACEMENTS];
  double fresh_cu[MAX_FRESH], fresh_nv[MAX_FRESH], fresh_rec[MAX_FRESH];
  uint64_t fresh_va_cu[3], fresh_va_nv[3]; /* round 0's buffer addresses */
  double same_cu[2 * MAX_FRESH], same_nv[MAX_FRESH], same_rec[MAX_FRESH];
  uint64_t same_at[MAX_FRESH][3]; /* each trial's physical addresses */
  int same_failed;                /* a library's allocation did not land where it was put */
  size_t place_wrong; /* output words of placement runs that differ from the first run's */
  void *cu_out, *nv_out, *rec_out;
  nvhcq_kernel_info info; /* its name is gone with the module: not printed */
} outcome;

/* The pointers (8 bytes each) then the ints (4 each): the kernels' parameters have no padding
 * between or after them, so this is their exact parameter block, as nvhcq wants it. */
typedef struct kernel_args {
  uint64_t ptr[3];
  int32_t ints[2];
  uint8_t packed[32];
  size_t size;
  void *params[5]; /* the same for cuLaunchKernel: where each argument is */
} kernel_args;

static int reps = DEFAULT_REPS;
static int rest = DEFAULT_REST;
static int placements = DEFAULT_PLACEMENTS;
static int fresh = DEFAULT_FRESH;
static int page_trials;
static int same_trials;
/* bench/place_probe.c's functions, when it is preloaded. */
static int (*probe_next)(uint64_t physical_address, uint64_t min_size);
static uint64_t (*probe_last)(void);

/* ---- inputs: a fixed-seed generator, so every run and both libraries see the same numbers ---- */

static uint64_t rng_state;

static uint64_t rng_next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* One step of the fixed sequences placements, page choices and same-page addresses are drawn
 * from (their own, apart from the inputs' generator, so that both sides see the same ones). */
static uint64_t mix_next(uint64_t *x) {
  *x ^= *x >> 31, *x *= 0xbf58476d1ce4e5b9ull, *x ^= *x >> 29;
  return *x;
}

static float rng_uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)((rng_next() >> 40) * (1.0 / 16777216.0));
}

static void fill_uniform(float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = rng_uniform(lo, hi);
}

static void fill_ew(void *in[2]) {
  rng_state = 1;
  fill_uniform(in[0], EW_N, -1, 1);
  fill_uniform(in[1], EW_N, -1, 1);
}

static void fill_softmax(void *in[2]) {
  rng_state = 2;
  fill_uniform(in[0], (size_t)SM_ROWS * SM_COLS, -4, 4);
}

/* k/1024 in fp16 for 0 < |k| <= 1024: at most 11 significant bits and no subnormal, so the value
 * is exact and the CPU reference multiplies the very numbers the tensor cores do. */
static uint16_t half_of_k1024(int k) {
  unsigned m = (unsigned)abs(k), e = 0;
  if (!m) return 0;
  while (m >> (e + 1)) e++; /* m = 1.f x 2^e */
  uint16_t frac = (uint16_t)((m << (10 - e)) & 0x3ff);
  return (uint16_t)((k < 0 ? 0x8000 : 0) | (e + 5) << 10 | frac);
}

static double half_value(uint16_t h) {
  int e = h >> 10 & 31, f = h & 1023;
  double v = e ? ldexp(1024 + f, e - 25) : ldexp(f, -24);
  return h & 0x8000 ? -v : v;
}

static void fill_matmul(void *in[2]) {
  rng_state = 3;
  for (int m = 0; m < 2; m++) {
    uint16_t *h = in[m];
    for (size_t i = 0; i < (size_t)MM_N * MM_N; i++)
      h[i] = half_of_k1024((int)(rng_next() % 2049) - 1024);
  }
}

/* ---- CPU references ---- */

static int check_ew(void *const in[2], const void *out, char *msg, size_t len) {
  const float *a = in[0], *b = in[1], *c = out;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < EW_N; i++) {
    float want = a[i] + b[i]; /* IEEE single addition, as the GPU's */
    if (memcmp(&want, &c[i], sizeof want) && !bad++) first = i;
  }
  if (bad)
    snprintf(msg, len, "%zu of %d differ, the first at %zu (%.9g, want %.9g)", bad, EW_N, first,
             c[first], a[first] + b[first]);
  else
    snprintf(msg, len, "exact on all %d elements", EW_N);
  return bad == 0;
}

/* The larger of two errors, a NaN sticking once seen (NaN compares false both ways). */
static double worse(double worst, double err) {
  return isnan(worst) || err <= worst ? worst : err;
}

/* Largest relative error of one row against a double-precision softmax. */
static double softmax_row_error(const float *x, const float *y) {
  double m = x[0], s = 0, worst = 0;
  for (int j = 1; j < SM_COLS; j++) m = x[j] > m ? x[j] : m;
  for (int j = 0; j < SM_COLS; j++) s += exp(x[j] - m);
  for (int j = 0; j < SM_COLS; j++) {
    double want = exp(x[j] - m) / s;
    worst = worse(worst, fabs(y[j] - want) / want);
  }
  return worst;
}

static int check_softmax(void *const in[2], const void *out, char *msg, size_t len) {
  const float *x = in[0], *y = out;
  double worst = 0;
  int rows = 0;
  for (int r = 0; r < SM_ROWS; r += 61, rows++) /* 68 rows, spread over the blocks */
    worst = worse(worst, softmax_row_error(x + (size_t)r * SM_COLS, y + (size_t)r * SM_COLS));
  snprintf(msg, len, "max relative error %.2e on %d sampled rows (bound 1e-5)", worst, rows);
  return worst < 1e-5;
}

/* Sampled row or column s of MM_SAMPLE: one in each 32-wide band, at a varying place in it, so
 * every tile position and warp of the kernel is looked at. */
static int mm_index(int s) {
  int band = MM_N / MM_SAMPLE;
  return s * band + (s * 37 + 5) % band;
}

static int check_matmul(void *const in[2], const void *out, char *msg, size_t len) {
  const uint16_t *a = in[0], *b = in[1];
  const float *c = out;
  double *bcol = malloc(sizeof(double) * MM_N * MM_SAMPLE), diff = 0, norm = 0;
  if (!bcol) return snprintf(msg, len, "out of host memory"), 0;
  for (int k = 0; k < MM_N; k++)
    for (int s = 0; s < MM_SAMPLE; s++)
      bcol[k * MM_SAMPLE + s] = half_value(b[k * MM_N + mm_index(s)]);
  for (int r = 0; r < MM_SAMPLE; r++) {
    const uint16_t *arow = a + (size_t)mm_index(r) * MM_N;
    for (int s = 0; s < MM_SAMPLE; s++) {
      double want = 0;
      for (int k = 0; k < MM_N; k++) want += half_value(arow[k]) * bcol[k * MM_SAMPLE + s];
      double got = c[(size_t)mm_index(r) * MM_N + mm_index(s)];
      diff += (got - want) * (got - want), norm += want * want;
    }
  }
  free(bcol);
  double err = sqrt(diff / norm);
  snprintf(msg, len, "relative Frobenius error %.2e on %dx%d sampled outputs (bound 1e-2)", err,
           MM_SAMPLE, MM_SAMPLE);
  return err < 1e-2;
}

#define EW_BYTES (4ull * EW_N)
#define SM_BYTES (4ull * SM_ROWS * SM_COLS)
#define MM_ELEMS ((size_t)MM_N * MM_N)

static const bench_case cases[] = {
    {.name = "ew_add",
     .grid = {1024, 1, 1},
     .block = {128, 1, 1},
     .inputs = 2,
     .in_bytes = EW_BYTES,
     .out_bytes = EW_BYTES,
     .ints = {EW_N},
     .int_count = 1,
     .work = 3.0 * EW_BYTES,
     .per_s = 1e9,
     .unit = "GB/s",
     .fill = fill_ew,
     .check = check_ew},
    {.name = "softmax_rows",
     .grid = {SM_ROWS, 1, 1},
     .block = {128, 1, 1},
     .inputs = 1,
     .in_bytes = SM_BYTES,
     .out_bytes = SM_BYTES,
     .ints = {SM_ROWS, SM_COLS},
     .int_count = 2,
     .work = 2.0 * SM_BYTES,
     .per_s = 1e9,
     .unit = "GB/s",
     .fill = fill_softmax,
     .check = check_softmax},
    {.name = "matmul_f16",
     .grid = {MM_N / 128, MM_N / 128, 1},
     .block = {256, 1, 1},
     .shared = MM_SHARED,
     .inputs = 2,
     .in_bytes = 2 * MM_ELEMS,
     .out_bytes = 4 * MM_ELEMS,
     .ints = {MM_N},
     .int_count = 1,
     .work = 2.0 * MM_ELEMS * MM_N,
     .per_s = 1e12,
     .unit = "TFLOP/s",
     .fill = fill_matmul,
     .check = check_matmul},
};
#define CASES ((int)(sizeof cases / sizeof cases[0]))

static void pack_args(kernel_args *a, const bench_case *c) {
  size_t off = 0;
  int n = 0;
  for (int i = 0; i <= c->inputs; i++, off += 8) {
    memcpy(a->packed + off, &a->ptr[i], 8);
    a->params[n++] = &a->ptr[i];
  }
  for (int i = 0; i < c->int_count; i++, off += 4) {
    a->ints[i] = c->ints[i];
    memcpy(a->packed + off, &a->ints[i], 4);
    a->params[n++] = &a->ints[i];
  }
  a->size = off;
}

static void *poison_bytes(size_t bytes) {
  void *p = malloc(bytes);
  if (!p) fprintf(stderr, "out of host memory\n"), exit(1);
  return memset(p, 0xff, bytes);
}

/* ---- nvhcq ---- */

/* Where placement p puts a case's buffers (inputs, then the output) in one allocation; returns
 * the bytes the allocation needs for every placement. */
/* NVHCQ_BENCH_REAL_AT: placements given as KiB offsets of each buffer ("0:4096:8192,..."),
 * instead of the fixed sequence; given_count of them. */
static size_t given_at[MAX_PLACEMENTS][3];
static int given_count;

static int parse_given(const char *s) {
  while (*s && given_count < MAX_PLACEMENTS) {
    for (int i = 0; i < 3; i++) {
      char *end;
      given_at[given_count][i] = (size_t)strtoull(s, &end, 10) << 10;
      if (end == s) return 0;
      s = end + (*end == ':');
      if (*end != ':') break;
    }
    given_count++;
    if (*s == ',')
      s++;
    else if (*s)
      return 0;
  }
  return given_count > 0 && !*s;
}

static size_t place_offsets(const bench_case *c, int p, size_t off[3]) {
  if (given_count) {
    size_t need = 0;
    for (int q = 0; q < given_count; q++)
      for (int i = 0; i <= c->inputs; i++) {
        size_t end = given_at[q][i] + (i < c->inputs ? c->in_bytes : c->out_bytes);
        need = end > need ? end : need;
      }
    for (int i = 0; i <= c->inputs; i++) off[i] = given_at[p][i];
    return need;
  }
  uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(p + 1);
  size_t at = 0;
  for (int i = 0; i <= c->inputs; i++) {
    at += (size_t)(mix_next(&x) % PLACE_GAPS) * PLACE_STEP;
    off[i] = at;
    at += i < c->inputs ? c->in_bytes : c->out_bytes;
  }
  return c->inputs * c->in_bytes + c->out_bytes + (size_t)(c->inputs + 1) * PLACE_GAPS * PLACE_STEP;
}

/* Output words that differ from the reference (the separately allocated run's output). */
static size_t words_differing(const void *out, const void *ref, size_t bytes) {
  size_t n = 0;
  for (size_t i = 0; i < bytes / 4; i++)
    n += ((const uint32_t *)out)[i] != ((const uint32_t *)ref)[i];
  return n;
}

/* The median over placements, and the range, of one side's times. */
static double place_median(const double *t, int n, double *lo, double *hi) {
  double v[2 * MAX_PLACEMENTS];
  memcpy(v, t, sizeof *v * (size_t)n);
  double m = median(v, n);
  *lo = v[0], *hi = v[n - 1]; /* median() sorted them */
  return m;
}

static nvhcq_device *nv_dev;
static nvhcq_module *nv_mod;
static nvhcq_signal *nv_sig[2]; /* released before the first launch and after the last */
static uint64_t nv_value;       /* the signals' last value: each submission raises it */

/* Per-launch GPU time of the last submission, from the two signals' timestamps; both must hold
 * `v`, or the timestamps would be an earlier submission's. */
static double nv_elapsed_us(uint64_t v) {
  if (nvhcq_signal_value(nv_sig[0]) != v || nvhcq_signal_value(nv_sig[1]) != v)
    fprintf(stderr, "nvhcq: the timing signals hold %llu and %llu, not %llu\n",
            (unsigned long long)nvhcq_signal_value(nv_sig[0]),
            (unsigned long long)nvhcq_signal_value(nv_sig[1]), (unsigned long long)v),
        exit(1);
  uint64_t ns = nvhcq_signal_timestamp_ns(nv_sig[1]) - nvhcq_signal_timestamp_ns(nv_sig[0]);
  return ns * 1e-3 / LAUNCHES;
}

/* The GPU idles `rest` times as long as it just worked (see DEFAULT_REST). */
static void rest_after(double gpu_us) {
  double s = gpu_us * 1e-6 * rest;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  if (rest) nanosleep(&ts, NULL);
}

static void nv_launches(nvhcq_queue *q, nvhcq_kernel *k, const bench_case *c,
                        const kernel_args *a) {
  for (int i = 0; i < LAUNCHES; i++)
    CHECK_NV(nvhcq_queue_launch(q, k, c->grid, c->block, c->shared, a->packed, a->size));
}

/* A plain queue recorded afresh for every submission, as eager work is. */
static double nv_time_queue(nvhcq_kernel *k, const bench_case *c, const kernel_args *a) {
  nvhcq_queue *q;
  double t[MAX_REPS];
  CHECK_NV(nvhcq_queue_create(nv_dev, NVHCQ_QUEUE_COMPUTE, &q));
  for (int r = -WARMUP; r < reps; r++) {
    uint64_t v = ++nv_value;
    CHECK_NV(nvhcq_queue_reset(q));
    CHECK_NV(nvhcq_queue_signal(q, nv_sig[0], v)); /* a host release: nothing runs before it */
    nv_launches(q, k, c, a);
    CHECK_NV(nvhcq_queue_signal(q, nv_sig[1], v)); /* rides on the last launch's QMD */
    CHECK_NV(nvhcq_queue_submit(q));
    CHECK_NV(nvhcq_signal_cpu_wait(nv_sig[1], v, 0));
    if (r >= 0) t[r] = nv_elapsed_us(v);
    rest_after(nv_elapsed_us(v) * LAUNCHES);
  }
  nvhcq_queue_destroy(q);
  return median(t, reps);
}

/* A recorded queue replayed. The signals' value is a variable raised before each replay: with a
 * fixed one, a replay that released nothing could not be told from one that did. */
static double nv_time_recorded(nvhcq_kernel *k, const bench_case *c, const kernel_args *a) {
  nvhcq_queue *q;
  nvhcq_var epoch;
  double t[MAX_REPS];
  CHECK_NV(nvhcq_queue_create_recorded(nv_dev, NVHCQ_QUEUE_COMPUTE, &q));
  CHECK_NV(nvhcq_queue_var(q, "epoch", nv_value + 1, &epoch));
  CHECK_NV(nvhcq_queue_signal_var(q, nv_sig[0], epoch));
  nv_launches(q, k, c, a);
  CHECK_NV(nvhcq_queue_signal_var(q, nv_sig[1], epoch));
  CHECK_NV(nvhcq_queue_finish(q));
  for (int r = -WARMUP; r < reps; r++) {
    uint64_t v = ++nv_value;
    CHECK_NV(nvhcq_queue_set_var(q, epoch, v));
    CHECK_NV(nvhcq_queue_submit(q));
    CHECK_NV(nvhcq_queue_cpu_wait_idle(q, 0));
    if (r >= 0) t[r] = nv_elapsed_us(v);
    rest_after(nv_elapsed_us(v) * LAUNCHES);
  }
  nvhcq_queue_destroy(q);
  return median(t, reps);
}

static void nv_poison(nvhcq_buffer *b, size_t bytes) {
  void *p = poison_bytes(bytes);
  CHECK_NV(nvhcq_buffer_write(b, 0, p, bytes));
  free(p);
}

static void *nv_read(nvhcq_buffer *b, size_t bytes) {
  void *p = poison_bytes(bytes);
  CHECK_NV(nvhcq_buffer_read(p, b, 0, bytes));
  return p;
}

/* Both kinds of nvhcq queue at one placement; which goes first takes turns with `turn`'s low bit,
 * as a second run at a placement is slower (see PLACE_REPS). */
static void nv_time_turns(nvhcq_kernel *k, const bench_case *c, const kernel_args *a, int turn,
                          double *queue, double *recorded) {
  if (turn & 1) *recorded = nv_time_recorded(k, c, a);
  *queue = nv_time_queue(k, c, a);
  if (!(turn & 1)) *recorded = nv_time_recorded(k, c, a);
}

/* Counts the output words at `at` in `b` that differ from the first run's. */
static void nv_compare_out(const bench_case *c, nvhcq_buffer *b, size_t at, outcome *o) {
  void *out = poison_bytes(c->out_bytes);
  CHECK_NV(nvhcq_buffer_read(out, b, at, c->out_bytes));
  o->place_wrong += words_differing(out, o->nv_out, c->out_bytes);
  free(out);
}

static void nv_run(const bench_case *c, void *const in[2], outcome *o) {
  nvhcq_kernel *k;
  nvhcq_buffer *buf[3];
  kernel_args a = {0};
  CHECK_NV(nvhcq_module_get_kernel(nv_mod, c->name, &k));
  o->info.struct_size = sizeof o->info;
  CHECK_NV(nvhcq_kernel_query_info(k, &o->info));
  for (int i = 0; i <= c->inputs; i++) {
    size_t bytes = i < c->inputs ? c->in_bytes : c->out_bytes;
    CHECK_NV(nvhcq_buffer_create(nv_dev, bytes, NVHCQ_MEMORY_DEVICE, &buf[i]));
    if (i < c->inputs) CHECK_NV(nvhcq_buffer_write(buf[i], 0, in[i], bytes));
    a.ptr[i] = nvhcq_buffer_gpu_address(buf[i]);
  }
  pack_args(&a, c);
  nvhcq_buffer *out = buf[c->inputs];
  nv_poison(out, c->out_bytes);
  o->nv_us = nv_time_queue(k, c, &a);
  o->nv_out = nv_read(out, c->out_bytes);
  nv_poison(out, c->out_bytes);
  o->rec_us = nv_time_recorded(k, c, &a);
  o->rec_out = nv_read(out, c->out_bytes);
  for (int i = 0; i <= c->inputs; i++) nvhcq_buffer_destroy(buf[i]);
}

/* The queue and recorded-queue times at each placement, outputs compared with the first run's. */
static void nv_place(const bench_case *c, void *const in[2], outcome *o) {
  nvhcq_kernel *k;
  nvhcq_buffer *all;
  size_t off[3];
  CHECK_NV(nvhcq_module_get_kernel(nv_mod, c->name, &k));
  CHECK_NV(nvhcq_buffer_create(nv_dev, place_offsets(c, 0, off), NVHCQ_MEMORY_DEVICE, &all));
  uint64_t base = nvhcq_buffer_gpu_address(all);
  int saved = reps;
  reps = PLACE_REPS;
  for (int p = 0; p < placements; p++) {
    kernel_args a = {0};
    place_offsets(c, p, off);
    for (int i = 0; i < c->inputs; i++)
      CHECK_NV(nvhcq_buffer_write(all, off[i], in[i], c->in_bytes));
    for (int i = 0; i <= c->inputs; i++) a.ptr[i] = base + off[i];
    pack_args(&a, c);
    nv_time_turns(k, c, &a, p, &o->place_nv[p], &o->place_rec[p]);
    nv_compare_out(c, all, off[c->inputs], o);
  }
  reps = saved;
  nvhcq_buffer_destroy(all);
}

/* Each fresh round: r padding buffers, then the case's buffers as nv_run makes them. */
static void nv_fresh(const bench_case *c, void *const in[2], outcome *o) {
  nvhcq_kernel *k;
  CHECK_NV(nvhcq_module_get_kernel(nv_mod, c->name, &k));
  int saved = reps;
  reps = PLACE_REPS;
  for (int r = 0; r < fresh; r++) {
    nvhcq_buffer *pad[MAX_FRESH], *buf[3];
    kernel_args a = {0};
    for (int i = 0; i < r; i++)
      CHECK_NV(nvhcq_buffer_create(nv_dev, FRESH_PAD, NVHCQ_MEMORY_DEVICE, &pad[i]));
    for (int i = 0; i <= c->inputs; i++) {
      size_t bytes = i < c->inputs ? c->in_bytes : c->out_bytes;
      CHECK_NV(nvhcq_buffer_create(nv_dev, bytes, NVHCQ_MEMORY_DEVICE, &buf[i]));
      if (i < c->inputs) CHECK_NV(nvhcq_buffer_write(buf[i], 0, in[i], bytes));
      a.ptr[i] = nvhcq_buffer_gpu_address(buf[i]);
      if (!r) o->fresh_va_nv[i] = a.ptr[i];
    }
    pack_args(&a, c);
    nv_time_turns(k, c, &a, r, &o->fresh_nv[r], &o->fresh_rec[r]);
    nv_compare_out(c, buf[c->inputs], 0, o);
    for (int i = 0; i <= c->inputs; i++) nvhcq_buffer_destroy(buf[i]);
    for (int i = 0; i < r; i++) nvhcq_buffer_destroy(pad[i]);
  }
  reps = saved;
}

static size_t pages_of(const bench_case *c, int i) {
  size_t bytes = i < c->inputs ? c->in_bytes : c->out_bytes;
  return (bytes + PAGE_BYTES - 1) / PAGE_BYTES;
}

/* Trial t's first pool page for each buffer: runs that do not overlap, from a fixed sequence. */
static void pick_pages(const bench_case *c, int t, size_t first[3]) {
  uint64_t x = 0x2545f4914f6cdd1dull * (uint64_t)(t + 1);
  for (int i = 0; i <= c->inputs; i++) {
    for (int ok = 0; !ok;) {
      first[i] = (size_t)(mix_next(&x) % (PAGE_POOL - pages_of(c, i) + 1));
      ok = 1;
      for (int j = 0; j < i; j++)
        ok &= first[i] + pages_of(c, i) <= first[j] || first[j] + pages_of(c, j) <= first[i];
    }
  }
}

/* The buffers mapped from pool pages `first` at consecutive addresses from `at`, in buffer order
 * or (reversed) last buffer first; timed in a queue, the output checked, then unmapped. */
static double nv_pages_once(const bench_case *c, void *const in[2], nvhcq_kernel *k,
                            nvhcq_reservation *r, uint64_t at, nvhcq_physical *pool,
                            const size_t first[3], int reversed, outcome *o) {
  nvhcq_buffer *buf[3];
  kernel_args a = {0};
  for (int n = 0; n <= c->inputs; n++) {
    int i = reversed ? c->inputs - n : n;
    uint64_t bytes = pages_of(c, i) * PAGE_BYTES;
    CHECK_NV(nvhcq_buffer_map_physical(r, at, pool, first[i] * PAGE_BYTES, bytes, &buf[i]));
    a.ptr[i] = at, at += bytes;
  }
  for (int i = 0; i < c->inputs; i++) CHECK_NV(nvhcq_buffer_write(buf[i], 0, in[i], c->in_bytes));
  pack_args(&a, c);
  double us = nv_time_queue(k, c, &a);
  nv_compare_out(c, buf[c->inputs], 0, o);
  for (int i = 0; i <= c->inputs; i++) nvhcq_buffer_destroy(buf[i]);
  return us;
}

/* Each trial's pages at two layouts: consecutive in buffer order, and reversed one page further
 * on in a second reservation (other address bits). */
static void nv_pages(const bench_case *c, void *const in[2], outcome *o) {
  nvhcq_kernel *k;
  nvhcq_physical *pool;
  nvhcq_reservation *r[2];
  size_t span = 0, first[3];
  double t[2][MAX_FRESH];
  size_t wrong = o->place_wrong;
  if (!page_trials) return;
  for (int i = 0; i <= c->inputs; i++) span += pages_of(c, i) * PAGE_BYTES;
  CHECK_NV(nvhcq_module_get_kernel(nv_mod, c->name, &k));
  CHECK_NV(nvhcq_physical_create(nv_dev, PAGE_POOL * PAGE_BYTES, &pool));
  for (int v = 0; v < 2; v++) CHECK_NV(nvhcq_reservation_create(span + PAGE_BYTES, 0, 0, &r[v]));
  int saved = reps;
  reps = PLACE_REPS;
  printf("%s: pages experiment (nvhcq queue, median of %d): the same pool pages at two address "
         "layouts\n",
         c->name, PLACE_REPS);
  for (int trial = 0; trial < page_trials; trial++) {
    pick_pages(c, trial, first);
    uint64_t base[2] = {nvhcq_reservation_gpu_address(r[0]),
                        nvhcq_reservation_gpu_address(r[1]) + PAGE_BYTES};
    for (int v = 0; v < 2; v++)
      t[v][trial] = nv_pages_once(c, in, k, r[v], base[v], pool, first, v, o);
    printf("  trial %2d, pool pages", trial);
    for (int i = 0; i <= c->inputs; i++) printf(" %2zu", first[i]);
    printf(": %.3f us at 0x%llx in order, %.3f at 0x%llx reversed\n", t[0][trial],
           (unsigned long long)base[0], t[1][trial], (unsigned long long)base[1]);
  }
  double d[MAX_FRESH], lo, hi, most = 0;
  for (int trial = 0; trial < page_trials; trial++) {
    d[trial] = fabs(t[0][trial] - t[1][trial]);
    most = d[trial] > most ? d[trial] : most;
  }
  double m = place_median(t[0], page_trials, &lo, &hi);
  printf("  over the trials' pages: median %.3f us [%.3f-%.3f]; between the two layouts of the "
         "same pages: median difference %.3f us, largest %.3f\n",
         m, lo, hi, median(d, page_trials), most);
  if (o->place_wrong > wrong)
    printf("  %zu output words differ from the first run's\n", o->place_wrong - wrong);
  reps = saved;
  for (int v = 0; v < 2; v++) CHECK_NV(nvhcq_reservation_destroy(r[v]));
  CHECK_NV(nvhcq_physical_destroy(pool));
}

/* Opens GPU 0 and loads the cubin; 0 (with a message) where there is no GPU nvhcq can drive. */
static int nv_open(const void *image, size_t size) {
  if (nvhcq_device_open(0, &nv_dev) != NVHCQ_SUCCESS) {
    fprintf(stderr, "nvhcq_bench_real: nvhcq cannot open GPU 0: %s\n", nvhcq_last_error());
    return 0;
  }
  bench_settle(nv_dev);
  CHECK_NV(nvhcq_module_load(nv_dev, image, size, &nv_mod));
  CHECK_NV(nvhcq_signal_create(nv_dev, 0, &nv_sig[0]));
  CHECK_NV(nvhcq_signal_create(nv_dev, 0, &nv_sig[1]));
  return 1;
}

static void nv_close(void) {
  nvhcq_signal_destroy(nv_sig[0]), nvhcq_signal_destroy(nv_sig[1]);
  nvhcq_module_unload(nv_mod);
  nvhcq_device_close(nv_dev);
}

/* Trial t's physical addresses (the same for both libraries): see SAME_BASE. */
static void same_addresses(const bench_case *c, outcome *o) {
  uint64_t at = SAME_BASE, x = 0x9e3779b97f4a7c15ull;
  for (int t = 0; t < same_trials; t++) {
    int order[3] = {0, 1, 2};
    for (int i = c->inputs; i > 0; i--) { /* Fisher-Yates over the buffers */
      int j = (int)(mix_next(&x) % (uint64_t)(i + 1)), keep = order[i];
      order[i] = order[j], order[j] = keep;
    }
    for (int i = 0; i <= c->inputs; i++) {
      at += (mix_next(&x) % 16) * PAGE_BYTES;
      o->same_at[t][order[i]] = at;
      at += pages_of(c, order[i]) * PAGE_BYTES;
    }
  }
}

/* Whether the allocation the probe was armed for landed at `want`; disarms it either way (an
 * allocator that did not reach the driver must not leave it armed for another allocation). */
static int placed_at(uint64_t want) {
  uint64_t got = probe_last();
  probe_next(0, 0);
  return got == want;
}

/* Buffer i of trial t for nvhcq, through the probe; 0 when it landed elsewhere. */
static int nv_same_buffer(const bench_case *c, outcome *o, int t, int i, nvhcq_buffer **b) {
  size_t bytes = i < c->inputs ? c->in_bytes : c->out_bytes;
  probe_next(o->same_at[t][i], bytes);
  CHECK_NV(nvhcq_buffer_create(nv_dev, bytes, NVHCQ_MEMORY_DEVICE, b));
  if (placed_at(o->same_at[t][i])) return 1;
  fprintf(stderr, "nvhcq's buffer %d of trial %d is not at physical 0x%llx\n", i, t,
          (unsigned long long)o->same_at[t][i]);
  return 0;
}

/* The same-pages trials on nvhcq's side: queue and recorded times, outputs compared. */
static void nv_same(const bench_case *c, void *const in[2], outcome *o) {
  if (!same_trials) return;
  nvhcq_kernel *k;
  CHECK_NV(nvhcq_module_get_kernel(nv_mod, c->name, &k));
  same_addresses(c, o);
  int saved = reps;
  reps = PLACE_REPS;
  for (int t = 0; t < same_trials && !o->same_failed; t++) {
    nvhcq_buffer *buf[3] = {NULL};
    kernel_args a = {0};
    for (int i = 0; i <= c->inputs && !o->same_failed; i++) {
      o->same_failed = !nv_same_buffer(c, o, t, i, &buf[i]);
      if (!o->same_failed && i < c->inputs)
        CHECK_NV(nvhcq_buffer_write(buf[i], 0, in[i], c->in_bytes));
      a.ptr[i] = nvhcq_buffer_gpu_address(buf[i]);
    }
    if (!o->same_failed) {
      pack_args(&a, c);
      nv_time_turns(k, c, &a, t, &o->same_nv[t], &o->same_rec[t]);
      nv_compare_out(c, buf[c->inputs], 0, o);
    }
    for (int i = 0; i <= c->inputs; i++) nvhcq_buffer_destroy(buf[i]);
  }
  reps = saved;
}

/* ---- libcuda ---- */

static void *cu_mod;

/* LAUNCHES launches captured from a stream into a graph, replayed between two events. */
static double cu_time_graph(void *f, const bench_case *c, kernel_args *a) {
  return cuda_graph_us_per_launch(f, c->grid, c->block, c->shared, a->params, LAUNCHES, WARMUP,
                                  reps);
}

static void cu_run(const bench_case *c, void *const in[2], outcome *o) {
  void *f;
  kernel_args a = {0};
  CHECK_CU(cu.get_function(&f, cu_mod, c->name));
  /* Over 48 KiB of dynamic shared memory is refused unless the kernel is told it may have it. */
  if (c->shared > 48 * 1024)
    CHECK_CU(cu.func_attr(f, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, (int)c->shared));
  for (int i = 0; i <= c->inputs; i++) {
    size_t bytes = i < c->inputs ? c->in_bytes : c->out_bytes;
    void *poison = i < c->inputs ? NULL : poison_bytes(bytes);
    CHECK_CU(cu.mem_alloc(&a.ptr[i], bytes));
    CHECK_CU(cu.htod(a.ptr[i], poison ? poison : in[i], bytes));
    free(poison);
  }
  pack_args(&a, c);
  o->cu_us = cu_time_graph(f, c, &a);
  o->cu_out = poison_bytes(c->out_bytes);
  CHECK_CU(cu.dtoh(o->cu_out, a.ptr[c->inputs], c->out_bytes));
  for (int i = 0; i <= c->inputs; i++) cu.mem_free(a.ptr[i]);
}

/* libcuda's graph time at each placement (the offsets nv_place used). */
static void cu_place(const bench_case *c, void *const in[2], outcome *o) {
  void *f;
  uint64_t all;
  size_t off[3];
  CHECK_CU(cu.get_function(&f, cu_mod, c->name));
  CHECK_CU(cu.mem_alloc(&all, place_offsets(c, 0, off)));
  int saved = reps;
  reps = PLACE_REPS;
  for (int p = 0; p < placements; p++) {
    kernel_args a = {0};
    place_offsets(c, p, off);
    for (int i = 0; i < c->inputs; i++) CHECK_CU(cu.htod(all + off[i], in[i], c->in_bytes));
    for (int i = 0; i <= c->inputs; i++) a.ptr[i] = all + off[i];
    pack_args(&a, c);
    /* Twice, so that libcuda's graphs keep the GPU as busy as nvhcq's two kinds of queue do. */
    o->place_cu[2 * p] = cu_time_graph(f, c, &a);
    o->place_cu[2 * p + 1] = cu_time_graph(f, c, &a);
    void *out = poison_bytes(c->out_bytes);
    CHECK_CU(cu.dtoh(out, all + off[c->inputs], c->out_bytes));
    o->place_wrong += words_differing(out, o->cu_out, c->out_bytes);
    free(out);
  }
  reps = saved;
  cu.mem_free(all);
}

/* libcuda's fresh rounds, as nv_fresh's: its own allocator places the buffers. */
static void cu_fresh(const bench_case *c, void *const in[2], outcome *o) {
  void *f;
  CHECK_CU(cu.get_function(&f, cu_mod, c->name));
  int saved = reps;
  reps = PLACE_REPS;
  for (int r = 0; r < fresh; r++) {
    uint64_t pad[MAX_FRESH];
    kernel_args a = {0};
    for (int i = 0; i < r; i++) CHECK_CU(cu.mem_alloc(&pad[i], (size_t)FRESH_PAD));
    for (int i = 0; i <= c->inputs; i++) {
      size_t bytes = i < c->inputs ? c->in_bytes : c->out_bytes;
      CHECK_CU(cu.mem_alloc(&a.ptr[i], bytes));
      if (i < c->inputs) CHECK_CU(cu.htod(a.ptr[i], in[i], bytes));
      if (!r) o->fresh_va_cu[i] = a.ptr[i];
    }
    pack_args(&a, c);
    o->fresh_cu[r] = cu_time_graph(f, c, &a);
    void *out = poison_bytes(c->out_bytes);
    CHECK_CU(cu.dtoh(out, a.ptr[c->inputs], c->out_bytes));
    o->place_wrong += words_differing(out, o->cu_out, c->out_bytes);
    free(out);
    for (int i = 0; i <= c->inputs; i++) cu.mem_free(a.ptr[i]);
    for (int i = 0; i < r; i++) cu.mem_free(pad[i]);
  }
  reps = saved;
}

/* libcuda's side of the same-pages trials, at nv_same's addresses. */
static void cu_same(const bench_case *c, void *const in[2], outcome *o) {
  if (!same_trials || o->same_failed) return;
  void *f;
  CHECK_CU(cu.get_function(&f, cu_mod, c->name));
  int saved = reps;
  reps = PLACE_REPS;
  for (int t = 0; t < same_trials && !o->same_failed; t++) {
    kernel_args a = {0};
    int made = 0;
    for (int i = 0; i <= c->inputs && !o->same_failed; i++) {
      size_t bytes = i < c->inputs ? c->in_bytes : c->out_bytes;
      probe_next(o->same_at[t][i], bytes);
      CHECK_CU(cu.mem_alloc(&a.ptr[i], bytes));
      made = i + 1;
      o->same_failed = !placed_at(o->same_at[t][i]);
      if (o->same_failed)
        fprintf(stderr, "libcuda's buffer %d of trial %d is not at physical 0x%llx\n", i, t,
                (unsigned long long)o->same_at[t][i]);
      else if (i < c->inputs)
        CHECK_CU(cu.htod(a.ptr[i], in[i], bytes));
    }
    if (!o->same_failed) {
      pack_args(&a, c);
      /* Twice, as at the placements: the run after another is slower (matmul_f16). */
      o->same_cu[2 * t] = cu_time_graph(f, c, &a);
      o->same_cu[2 * t + 1] = cu_time_graph(f, c, &a);
      void *out = poison_bytes(c->out_bytes);
      CHECK_CU(cu.dtoh(out, a.ptr[c->inputs], c->out_bytes));
      o->place_wrong += words_differing(out, o->cu_out, c->out_bytes);
      free(out);
    }
    for (int i = 0; i < made; i++) cu.mem_free(a.ptr[i]);
  }
  reps = saved;
}

/* ---- checks and the report ---- */

/* Index of the first 32-bit word where two outputs differ, or -1. */
static long first_difference(const void *x, const void *y, size_t bytes) {
  const uint32_t *a = x, *b = y;
  for (size_t i = 0; i < bytes / 4; i++)
    if (a[i] != b[i]) return (long)i;
  return -1;
}

static size_t poison_left(const void *out, size_t bytes) {
  const uint32_t *w = out;
  size_t n = 0;
  for (size_t i = 0; i < bytes / 4; i++) n += w[i] == POISON;
  return n;
}

/* One output against the reference output (libcuda's, else nvhcq queue's); 1 when identical. */
static int same_bits(const char *what, const void *out, const void *ref, const char *ref_name,
                     size_t bytes) {
  long i = first_difference(out, ref, bytes);
  if (i < 0) return printf("  %s vs %s: bit-identical\n", what, ref_name), 1;
  printf("  %s vs %s: DIFFER, first at float %ld (0x%08x vs 0x%08x)\n", what, ref_name, i,
         ((const uint32_t *)out)[i], ((const uint32_t *)ref)[i]);
  return 0;
}

/* Prints what each output was judged to be; 1 when all is right. */
static int report_checks(const bench_case *c, void *const in[2], const outcome *o, int have_cu) {
  char msg[160];
  int ok = 1;
  printf("%s: %u registers, %u bytes of static and %u of dynamic shared memory per block\n",
         c->name, o->info.registers, o->info.shared_bytes, c->shared);
  const void *ref = have_cu ? o->cu_out : o->nv_out;
  const char *ref_name = have_cu ? "libcuda" : "nvhcq queue (no libcuda)";
  if (have_cu) ok &= same_bits("nvhcq queue", o->nv_out, ref, ref_name, c->out_bytes);
  ok &= same_bits("nvhcq recorded", o->rec_out, ref, ref_name, c->out_bytes);
  size_t left = poison_left(ref, c->out_bytes);
  if (left) printf("  %zu output words were never written\n", left), ok = 0;
  if (o->place_wrong)
    printf("  %zu output words of the placement runs differ from the first run's\n",
           o->place_wrong),
        ok = 0;
  int good = c->check(in, ref, msg, sizeof msg);
  printf("  CPU reference: %s: %s\n", good ? "ok" : "FAILED", msg);
  double rate = c->work / c->per_s * 1e6; /* per microsecond of a launch */
  if (have_cu)
    printf("  rate: libcuda %.2f %s,", rate / o->cu_us, c->unit);
  else
    printf("  rate:");
  printf(" nvhcq queue %.2f %s, nvhcq recorded %.2f %s\n", rate / o->nv_us, c->unit,
         rate / o->rec_us, c->unit);
  return ok && good;
}

static void report_table(const int *run, const outcome *o, int have_cu) {
  printf("%-14s %17s %15s %7s %18s %7s\n", "kernel", "libcuda graph us", "nvhcq queue us", "ratio",
         "nvhcq recorded us", "ratio");
  for (int i = 0; i < CASES; i++) {
    if (!run[i]) continue;
    if (have_cu)
      printf("%-14s %17.3f %15.3f %7.3f %18.3f %7.3f\n", cases[i].name, o[i].cu_us, o[i].nv_us,
             o[i].nv_us / o[i].cu_us, o[i].rec_us, o[i].rec_us / o[i].cu_us);
    else
      printf("%-14s %17s %15.3f %7s %18.3f %7s\n", cases[i].name, "(no libcuda)", o[i].nv_us, "-",
             o[i].rec_us, "-");
  }
}

/* One kernel's row of a spread table: each side's median and range over n[s] times. */
static void report_spread_row(const char *name, const double *const t[3], const int n[3],
                              int have_cu) {
  double lo[3], hi[3], m[3];
  char col[3][40];
  for (int s = 0; s < 3; s++) {
    m[s] = place_median(t[s], n[s], &lo[s], &hi[s]);
    snprintf(col[s], sizeof col[s], "%.3f [%.3f-%.3f]", m[s], lo[s], hi[s]);
  }
  if (have_cu)
    printf("%-14s %22s %22s %7.3f %22s %7.3f\n", name, col[0], col[1], m[1] / m[0], col[2],
           m[2] / m[0]);
  else
    printf("%-14s %22s %22s %7s %22s %7s\n", name, "(no libcuda)", col[1], "-", col[2], "-");
}

static void report_spread_head(void) {
  printf("%-14s %22s %22s %7s %22s %7s\n", "kernel", "libcuda graph", "nvhcq queue", "ratio",
         "nvhcq recorded", "ratio");
}

static void report_places(const int *run, const outcome *o, int have_cu) {
  if (!placements) return;
  printf("over %d placements of the buffers in one allocation, the same offsets for both (median "
         "of %d at each, libcuda's graph timed twice): median us per launch [fastest-slowest]\n",
         placements, PLACE_REPS);
  report_spread_head();
  const int n[3] = {2 * placements, placements, placements};
  for (int i = 0; i < CASES; i++)
    if (run[i])
      report_spread_row(cases[i].name,
                        (const double *const[3]){o[i].place_cu, o[i].place_nv, o[i].place_rec}, n,
                        have_cu);
}

static void report_fresh(const int *run, const outcome *o, int have_cu) {
  if (!fresh) return;
  printf("over %d rounds of fresh buffers from each library's own allocator (round r allocates r "
         "x 2 MiB first; median of %d in each): median us per launch [fastest-slowest]\n",
         fresh, PLACE_REPS);
  report_spread_head();
  const int n[3] = {fresh, fresh, fresh};
  for (int i = 0; i < CASES; i++)
    if (run[i])
      report_spread_row(cases[i].name,
                        (const double *const[3]){o[i].fresh_cu, o[i].fresh_nv, o[i].fresh_rec}, n,
                        have_cu);
  for (int i = 0; i < CASES; i++) {
    if (!run[i] || !getenv("NVHCQ_BENCH_REAL_VERBOSE")) continue;
    printf("%s round 0 buffers: nvhcq", cases[i].name);
    for (int b = 0; b <= cases[i].inputs; b++)
      printf(" 0x%llx", (unsigned long long)o[i].fresh_va_nv[b]);
    printf(", libcuda");
    for (int b = 0; b <= cases[i].inputs; b++)
      printf(" 0x%llx", (unsigned long long)o[i].fresh_va_cu[b]);
    printf("\n  rounds nvhcq queue/recorded vs libcuda:");
    for (int r = 0; r < fresh; r++)
      printf(" %.3f/%.3f:%.3f", o[i].fresh_nv[r], o[i].fresh_rec[r], o[i].fresh_cu[r]);
    printf("\n");
  }
}

/* The fourth table: both libraries on the same physical pages. */
static void report_same(const int *run, const outcome *o, int have_cu) {
  if (!same_trials || !have_cu) return;
  printf("over %d sets of the same physical pages for both libraries (placed by the probe; median "
         "of %d in each, libcuda's graph timed twice): median us per launch [fastest-slowest]\n",
         same_trials, PLACE_REPS);
  report_spread_head();
  const int n[3] = {2 * same_trials, same_trials, same_trials};
  for (int i = 0; i < CASES; i++) {
    if (!run[i]) continue;
    if (o[i].same_failed) {
      printf("%-14s (a buffer did not land at its physical address: see above)\n", cases[i].name);
      continue;
    }
    report_spread_row(cases[i].name,
                      (const double *const[3]){o[i].same_cu, o[i].same_nv, o[i].same_rec}, n, 1);
  }
  for (int i = 0; i < CASES; i++) {
    if (!run[i] || o[i].same_failed || !getenv("NVHCQ_BENCH_REAL_VERBOSE")) continue;
    for (int t = 0; t < same_trials; t++) {
      printf("%s same pages %d at MiB", cases[i].name, t);
      for (int b = 0; b <= cases[i].inputs; b++)
        printf(" %llu", (unsigned long long)(o[i].same_at[t][b] >> 20));
      printf(": nvhcq %.3f/%.3f libcuda %.3f/%.3f\n", o[i].same_nv[t], o[i].same_rec[t],
             o[i].same_cu[2 * t], o[i].same_cu[2 * t + 1]);
    }
  }
}

/* NVHCQ_BENCH_REAL_VERBOSE: every placement's offsets and times. */
static void report_each_place(const int *run, const outcome *o) {
  if (!getenv("NVHCQ_BENCH_REAL_VERBOSE")) return;
  for (int i = 0; i < CASES; i++) {
    if (!run[i]) continue;
    for (int p = 0; p < placements; p++) {
      size_t off[3];
      place_offsets(&cases[i], p, off);
      printf("%s placement %d at KiB", cases[i].name, p);
      for (int b = 0; b <= cases[i].inputs; b++) printf(" %zu", off[b] >> 10);
      printf(": nvhcq %.3f/%.3f libcuda %.3f/%.3f\n", o[i].place_nv[p], o[i].place_rec[p],
             o[i].place_cu[2 * p], o[i].place_cu[2 * p + 1]);
    }
  }
}

/* Marks the kernels to run (all, or the one named); 0 when the name is unknown. */
static int select_cases(const char *only, int *run) {
  int any = 0;
  for (int i = 0; i < CASES; i++) {
    run[i] = !only || !strcmp(only, cases[i].name);
    any |= run[i];
  }
  return any;
}

static int usage(const char *argv0) {
  fprintf(stderr, "usage: %s REAL_KERNELS.cubin [", argv0);
  for (int i = 0; i < CASES; i++) fprintf(stderr, "%s%s", i ? "|" : "", cases[i].name);
  fprintf(stderr,
          "]\n  (build/bench/real_kernels_sm_90.cubin, built when nvcc knows sm_90; "
          "NVHCQ_BENCH_REAL_REPS=%d repeats by default, NVHCQ_BENCH_REAL_PLACEMENTS=%d, "
          "NVHCQ_BENCH_REAL_REST=%d)\n",
          DEFAULT_REPS, DEFAULT_PLACEMENTS, DEFAULT_REST);
  return 2;
}

static void alloc_inputs(const bench_case *c, void *in[2]) {
  in[0] = in[1] = NULL;
  for (int i = 0; i < c->inputs; i++) in[i] = poison_bytes(c->in_bytes);
  c->fill(in);
}

/* Each library runs alone: nvhcq's device is closed before libcuda's context is made. With both
 * open (libcuda's side run first, nvhcq's device already open; a build for that measurement)
 * both were slower on the H200: ew_add 2.51-2.53 us per launch on each side, 2.45-2.48 alone. */
static void run_all(const int *run, void *in[][2], outcome *o, const void *image, int have_cu) {
  for (int i = 0; i < CASES; i++)
    if (run[i])
      nv_run(&cases[i], in[i], &o[i]), nv_place(&cases[i], in[i], &o[i]),
          nv_fresh(&cases[i], in[i], &o[i]), nv_pages(&cases[i], in[i], &o[i]),
          nv_same(&cases[i], in[i], &o[i]);
  nv_close();
  if (!have_cu) return;
  cuda_context();
  CHECK_CU(cu.module_load(&cu_mod, image));
  for (int i = 0; i < CASES; i++)
    if (run[i])
      cu_run(&cases[i], in[i], &o[i]), cu_place(&cases[i], in[i], &o[i]),
          cu_fresh(&cases[i], in[i], &o[i]), cu_same(&cases[i], in[i], &o[i]);
}

/* bench/place_probe.c, if it is preloaded (the same-pages table needs it). */
static int find_probe(void) {
  probe_next = (int (*)(uint64_t, uint64_t))dlsym(RTLD_DEFAULT, "nvhcq_place_probe_next");
  probe_last = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "nvhcq_place_probe_last");
  if (probe_next && probe_last) return 1;
  printf("NVHCQ_BENCH_REAL_SAME_PAGES: skipped: it needs LD_PRELOAD=libnvhcq_place_probe.so "
         "(built beside this benchmark)\n");
  return 0;
}

/* An integer setting from the environment, left at its default when unset; 0 (with a message)
 * when it is outside lo..hi. */
static int env_int(const char *name, int lo, int hi, int *value) {
  const char *env = getenv(name);
  if (env) *value = atoi(env);
  if (*value >= lo && *value <= hi) return 1;
  fprintf(stderr, "%s must be %d..%d\n", name, lo, hi);
  return 0;
}

int main(int argc, char **argv) {
  int run[CASES];
  if (argc < 2 || argc > 3 || !select_cases(argc == 3 ? argv[2] : NULL, run)) return usage(argv[0]);
  if (!env_int("NVHCQ_BENCH_REAL_REPS", 1, MAX_REPS, &reps) ||
      !env_int("NVHCQ_BENCH_REAL_PLACEMENTS", 0, MAX_PLACEMENTS, &placements))
    return 2;
  const char *env = getenv("NVHCQ_BENCH_REAL_AT");
  if (env && !parse_given(env))
    return fprintf(stderr, "NVHCQ_BENCH_REAL_AT: KiB offsets a:b:c, placements split by commas\n"),
           2;
  if (env) placements = given_count;
  if (!env_int("NVHCQ_BENCH_REAL_PAGES", 0, MAX_FRESH, &page_trials) ||
      !env_int("NVHCQ_BENCH_REAL_FRESH", 0, MAX_FRESH, &fresh) ||
      !env_int("NVHCQ_BENCH_REAL_SAME_PAGES", 0, MAX_FRESH, &same_trials) ||
      !env_int("NVHCQ_BENCH_REAL_REST", 0, MAX_REST, &rest))
    return 2;
  bench_after_rep = rest_after;
  if (same_trials && !find_probe()) same_trials = 0;
  size_t size;
  void *image = read_file(argv[1], &size);
  if (!image) {
    fprintf(stderr, "nvhcq_bench_real: skipped: cannot read %s\n", argv[1]);
    return usage(argv[0]);
  }
  if (!nv_open(image, size)) return 1;
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(nv_dev, &info);
  int have_cu = cuda_load();
  void *in[CASES][2] = {{NULL}};
  outcome o[CASES] = {0};
  for (int i = 0; i < CASES; i++)
    if (run[i]) alloc_inputs(&cases[i], in[i]);
  run_all(run, in, o, image, have_cu);
  printf("nvhcq realistic kernels on %s (%s): GPU time per launch, %d launches per submission, "
         "median of %d, the GPU resting %dx its work after each; ratio = nvhcq / libcuda\n",
         info.name, info.arch, LAUNCHES, reps, rest);
  report_table(run, o, have_cu);
  report_places(run, o, have_cu);
  report_fresh(run, o, have_cu);
  report_same(run, o, have_cu);
  report_each_place(run, o);
  int ok = 1;
  for (int i = 0; i < CASES; i++)
    if (run[i]) ok &= report_checks(&cases[i], in[i], &o[i], have_cu);
  printf("%s\n", ok ? "all outputs correct" : "SOME OUTPUTS ARE WRONG");
  return ok ? 0 : 1;
}
