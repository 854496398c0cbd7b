/* `nvhcq profile`: runs a program with NVHCQ_PROFILE set, and draws a trace the profiler wrote
 * (one event per line, keys in its fixed order) as an SVG timeline with a row per track. */
#define _GNU_SOURCE
#include "profile_svg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct event {
  char name[64], cat[16];
  int pid, tid, instant;
  double ts, dur; /* microseconds */
  char detail[160];
} event;

typedef struct track {
  int pid, tid;
  char label[128];
} track;

typedef struct trace {
  event *events;
  size_t count, capacity;
  track tracks[64];
  int track_count;
  char process[64][112]; /* names by pid, for pids below 64 */
} trace;

/* The string value of "key":"..." in a line, unescaped as far as the profiler escapes. */
static int string_field(const char *line, const char *key, char *out, size_t size) {
  char pattern[40];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  const char *p = strstr(line, pattern);
  if (!p) return 0;
  p += strlen(pattern);
  size_t n = 0;
  for (; *p && *p != '"'; p++) {
    if (*p == '\\' && p[1]) p++;
    if (n + 1 < size) out[n++] = *p;
  }
  out[n] = 0;
  return 1;
}

static int number_field(const char *line, const char *key, double *out) {
  char pattern[40];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char *p = strstr(line, pattern);
  return p && sscanf(p + strlen(pattern), "%lf", out) == 1;
}

static track *track_for(trace *t, int pid, int tid) {
  for (int i = 0; i < t->track_count; i++)
    if (t->tracks[i].pid == pid && t->tracks[i].tid == tid) return &t->tracks[i];
  if (t->track_count == 64) return NULL;
  track *k = &t->tracks[t->track_count++];
  k->pid = pid, k->tid = tid;
  snprintf(k->label, sizeof k->label, "pid %d tid %d", pid, tid);
  return k;
}

/* A metadata line: a process's or a track's name. */
static void read_metadata(trace *t, const char *line) {
  char kind[32], name[112];
  double pid = 0, tid = 0;
  if (!string_field(line, "name", kind, sizeof kind) || !number_field(line, "pid", &pid)) return;
  const char *args = strstr(line, "\"args\":");
  if (!args || !string_field(args, "name", name, sizeof name)) return;
  if (!strcmp(kind, "process_name") && pid >= 0 && pid < 64)
    snprintf(t->process[(int)pid], sizeof t->process[0], "%s", name);
  if (!strcmp(kind, "thread_name") && number_field(line, "tid", &tid)) {
    track *k = track_for(t, (int)pid, (int)tid);
    if (k) snprintf(k->label, sizeof k->label, "%s", name);
  }
}

static int read_event(trace *t, const char *line) {
  if (t->count == t->capacity) {
    size_t cap = t->capacity ? 2 * t->capacity : 1024;
    event *grown = realloc(t->events, cap * sizeof *grown);
    if (!grown) return 1;
    t->events = grown, t->capacity = cap;
  }
  event *e = &t->events[t->count];
  memset(e, 0, sizeof *e);
  double pid = 0, tid = 0, v;
  string_field(line, "name", e->name, sizeof e->name);
  string_field(line, "cat", e->cat, sizeof e->cat);
  if (!number_field(line, "pid", &pid) || !number_field(line, "tid", &tid) ||
      !number_field(line, "ts", &e->ts))
    return 0;
  e->pid = (int)pid, e->tid = (int)tid;
  e->instant = strstr(line, "\"ph\":\"i\"") != NULL;
  if (!e->instant) number_field(line, "dur", &e->dur);
  const char *args = strstr(line, "\"args\":");
  if (args) {
    char grid[32] = "", block[32] = "";
    size_t n = 0;
    if (string_field(args, "grid", grid, sizeof grid) &&
        string_field(args, "block", block, sizeof block))
      n += snprintf(e->detail + n, sizeof e->detail - n, ", grid %s, block %s", grid, block);
    if (number_field(args, "bytes", &v) && n < sizeof e->detail)
      n += snprintf(e->detail + n, sizeof e->detail - n, ", %.0f bytes", v);
    if (number_field(args, "GB/s", &v) && n < sizeof e->detail)
      n += snprintf(e->detail + n, sizeof e->detail - n, ", %.2f GB/s", v);
    if (number_field(args, "queue", &v) && n < sizeof e->detail)
      snprintf(e->detail + n, sizeof e->detail - n, ", queue %.0f", v);
  }
  if (track_for(t, e->pid, e->tid)) t->count++;
  return 0;
}

static int read_trace(const char *path, trace *t) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "nvhcq profile: cannot read %s\n", path);
    return 1;
  }
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  while (!rc && getline(&line, &cap, f) > 0) {
    if (strstr(line, "\"ph\":\"M\""))
      read_metadata(t, line);
    else if (strstr(line, "\"ph\":\"X\"") || strstr(line, "\"ph\":\"i\""))
      rc = read_event(t, line);
  }
  free(line);
  fclose(f);
  if (!rc && t->count == 0) {
    fprintf(stderr, "nvhcq profile: %s holds no events nvhcq's profiler wrote\n", path);
    rc = 1;
  }
  return rc;
}

static void put_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else if (*s == '"')
      fputs("&quot;", f);
    else
      fputc(*s, f);
  }
}

/* A kernel's colour from its name, so the same kernel looks the same everywhere. */
static const char *colour(const event *e, char *buf, size_t size) {
  if (!strcmp(e->cat, "copy")) return "#3a9d5d";
  if (!strcmp(e->cat, "wait")) return "#b0b0b0";
  if (!strcmp(e->cat, "submit")) return "#4a78c2";
  if (!strcmp(e->cat, "signal")) return "#d04a3a";
  unsigned h = 2166136261u;
  for (const char *c = e->name; *c; c++) h = (h ^ (unsigned char)*c) * 16777619u;
  snprintf(buf, size, "hsl(%u,60%%,55%%)", h % 360);
  return buf;
}

static int track_index(const trace *t, int pid, int tid) {
  for (int i = 0; i < t->track_count; i++)
    if (t->tracks[i].pid == pid && t->tracks[i].tid == tid) return i;
  return -1;
}

static int track_order(const void *a, const void *b) {
  const track *x = a, *y = b;
  return x->pid != y->pid ? x->pid - y->pid : x->tid - y->tid;
}

#define LEFT   240.0
#define WIDTH  1400.0
#define ROW    30.0
#define HEADER 40.0

static void draw_axis(FILE *f, double t0, double span, double height) {
  static const double steps[] = {1, 2, 5};
  double step = 1;
  for (double scale = 0.001;; scale *= 10) {
    int found = 0;
    for (int i = 0; i < 3 && !found; i++)
      if (span / (steps[i] * scale) <= 10) step = steps[i] * scale, found = 1;
    if (found) break;
  }
  for (double t = 0; t <= span; t += step) {
    double x = LEFT + t / span * WIDTH;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n", x,
            HEADER - 8, x, height - 20);
    if (step >= 1000)
      fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\">%.3g ms</text>\n", x + 2,
              HEADER - 12, t / 1000);
    else
      fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\">%.3g us</text>\n", x + 2,
              HEADER - 12, t);
  }
  (void)t0;
}

static void draw_events(FILE *f, const trace *t, double t0, double span) {
  char buf[32];
  for (size_t i = 0; i < t->count; i++) {
    const event *e = &t->events[i];
    int row = track_index(t, e->pid, e->tid);
    double x = LEFT + (e->ts - t0) / span * WIDTH, y = HEADER + row * ROW + 4;
    double w = e->dur / span * WIDTH;
    fputs("<g><title>", f);
    put_text(f, e->name);
    fprintf(f, ": %.3f us at %.3f us", e->dur, e->ts - t0);
    put_text(f, e->detail);
    fputs("</title>", f);
    if (e->instant)
      fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"1.5\" height=\"%.0f\" fill=\"%s\"/>",
              x - 0.75, y, ROW - 8, colour(e, buf, sizeof buf));
    else
      fprintf(f,
              "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\" "
              "stroke=\"#fff\" stroke-width=\"0.3\"/>",
              x, y, w < 0.5 ? 0.5 : w, ROW - 8, colour(e, buf, sizeof buf));
    if (w > 8.0 * strlen(e->name)) {
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#fff\">", x + 3,
              y + ROW / 2 + 1);
      put_text(f, e->name);
      fputs("</text>", f);
    }
    fputs("</g>\n", f);
  }
}

static int write_svg(const trace *t, const char *path) {
  double t0 = 1e300, t1 = -1e300;
  for (size_t i = 0; i < t->count; i++) {
    const event *e = &t->events[i];
    if (e->ts < t0) t0 = e->ts;
    if (e->ts + e->dur > t1) t1 = e->ts + e->dur;
  }
  double span = t1 > t0 ? t1 - t0 : 1;
  double height = HEADER + t->track_count * ROW + 30;
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "nvhcq profile: cannot write %s\n", path);
    return 1;
  }
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
          LEFT + WIDTH + 20, height);
  draw_axis(f, t0, span, height);
  for (int i = 0; i < t->track_count; i++) {
    const track *k = &t->tracks[i];
    fprintf(f, "<text x=\"6\" y=\"%.1f\" font-size=\"12\">", HEADER + i * ROW + ROW / 2 + 4);
    if (k->pid >= 0 && k->pid < 64 && t->process[k->pid][0]) {
      put_text(f, t->process[k->pid]);
      fputs(" / ", f);
    }
    put_text(f, k->label);
    fputs("</text>\n", f);
  }
  draw_events(f, t, t0, span);
  fprintf(f,
          "<text x=\"6\" y=\"%.0f\" font-size=\"11\" fill=\"#666\">%.3f ms; hover for "
          "names and times</text>\n</svg>\n",
          height - 8, span / 1000);
  return fclose(f) != 0;
}

/* Time per kernel name, the most first. */
static void print_summary(const trace *t) {
  struct {
    char name[64];
    double us;
    unsigned n;
  } rows[32];
  int count = 0;
  for (size_t i = 0; i < t->count; i++) {
    const event *e = &t->events[i];
    if (strcmp(e->cat, "kernel") && strcmp(e->cat, "copy")) continue;
    int r = 0;
    while (r < count && strcmp(rows[r].name, e->name)) r++;
    if (r == count) {
      if (count == 32) continue;
      snprintf(rows[count].name, sizeof rows[0].name, "%s", e->name);
      rows[count].us = 0, rows[count].n = 0, count++;
    }
    rows[r].us += e->dur, rows[r].n++;
  }
  for (int i = 0; i < count; i++) /* a few rows: insertion order by time */
    for (int j = i + 1; j < count; j++)
      if (rows[j].us > rows[i].us) {
        __typeof__(rows[0]) tmp = rows[i];
        rows[i] = rows[j], rows[j] = tmp;
      }
  for (int i = 0; i < count; i++)
    printf("  %-40s %6u x %12.3f us = %12.3f us\n", rows[i].name, rows[i].n, rows[i].us / rows[i].n,
           rows[i].us);
}

int profile_render_svg(const char *json_path, const char *svg_path) {
  trace *t = calloc(1, sizeof *t);
  if (!t) return 1;
  int rc = read_trace(json_path, t);
  if (!rc) {
    qsort(t->tracks, (size_t)t->track_count, sizeof t->tracks[0], track_order);
    rc = write_svg(t, svg_path);
    if (!rc) {
      printf("nvhcq profile: %zu events drawn in %s\n", t->count, svg_path);
      print_summary(t);
    }
  }
  free(t->events);
  free(t);
  return rc;
}

static int usage(void) {
  fprintf(stderr, "usage: nvhcq profile [-o TRACE.json] [--svg OUT.svg] -- PROGRAM [ARGS...]\n"
                  "       nvhcq profile --svg TRACE.json -o OUT.svg\n");
  return 2;
}

/* Runs the program with NVHCQ_PROFILE=trace and returns its exit status (128 + signal). */
static int run_profiled(char **argv, const char *trace_path) {
  pid_t pid = fork();
  if (pid < 0) {
    perror("nvhcq profile: fork");
    return 1;
  }
  if (pid == 0) {
    setenv("NVHCQ_PROFILE", trace_path, 1);
    execvp(argv[0], argv);
    fprintf(stderr, "nvhcq profile: cannot run %s\n", argv[0]);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cmd_profile(int argc, char **argv) {
  const char *out = NULL, *svg = NULL;
  int i = 2;
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc)
      out = argv[++i];
    else if (!strcmp(argv[i], "--svg") && i + 1 < argc)
      svg = argv[++i];
    else
      return usage();
  }
  if (i == argc) { /* no program: draw a trace */
    if (!svg || !out) return usage();
    return profile_render_svg(svg, out);
  }
  if (i + 1 == argc) return usage();
  const char *trace_path = out ? out : "nvhcq-profile.json";
  unlink(trace_path); /* a trace left from before is not this run's */
  int rc = run_profiled(argv + i + 1, trace_path);
  if (access(trace_path, R_OK) != 0) {
    fprintf(stderr, "nvhcq profile: %s wrote no trace (did it open a GPU with nvhcq?)\n",
            argv[i + 1]);
    return rc ? rc : 1;
  }
  fprintf(stderr, "nvhcq profile: trace in %s (open it in https://ui.perfetto.dev)\n", trace_path);
  if (svg && profile_render_svg(trace_path, svg)) return rc ? rc : 1;
  return rc;
}
