/* CUDA's error log management (cuLogs*, CUDA 12.9): the messages this library writes when a call
 * fails, kept in memory, handed to registered callbacks and dumped to a file or a buffer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* NVIDIA's documented limit: logs older than the last 25600 bytes are dropped. */
#define LOG_BYTES   25600
#define LOG_ENTRIES 1024
#define CB_MAGIC    0x53474f4cu

/* A kept message; the iterator of the i-th kept one is next_seq - count + i. */
typedef struct entry {
  char *text; /* the line (see line_head), no newline */
  size_t len;
} entry;

struct CUlogsCallbackEntry_st {
  unsigned magic;
  CUlogsCallback fn;
  void *data;
  struct CUlogsCallbackEntry_st *next;
};

/* Its own lock: messages come from calls that hold the library's lock and from ones that do not. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry ring[LOG_ENTRIES];
static unsigned first, count; /* the oldest kept entry's slot, and how many are kept */
static size_t bytes;          /* bytes kept, a newline after each message counted */
static CUlogIterator next_seq;
static struct CUlogsCallbackEntry_st *callbacks;
/* A callback's own failing calls are kept but not handed to callbacks again. */
static __thread int in_callback;

static void drop_oldest(void) {
  entry *e = &ring[first];
  bytes -= e->len + 1;
  free(e->text);
  e->text = NULL;
  first = (first + 1) % LOG_ENTRIES;
  count--;
}

/* A kept line is NVIDIA's (as its library writes them on the H200, driver 580): local time with
 * milliseconds, the thread, "CUDA" and the level, then the message (callbacks get the message
 * alone): "[15:58:36.655][140500076980032][CUDA][E] message". */
static int line_head(char *out, size_t size, CUlogLevel level) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  localtime_r(&ts.tv_sec, &tm);
  return snprintf(out, size, "[%02d:%02d:%02d.%03ld][%lu][CUDA][%c] ", tm.tm_hour, tm.tm_min,
                  tm.tm_sec, ts.tv_nsec / 1000000, (unsigned long)pthread_self(),
                  level == CU_LOG_LEVEL_WARNING ? 'W' : 'E');
}

/* Keeps a message; returns its line's length (0 when it could not be kept). */
static size_t keep(CUlogLevel level, const char *message) {
  char head[96];
  size_t len = (size_t)line_head(head, sizeof head, level) + strlen(message);
  if (len >= LOG_BYTES) len = LOG_BYTES - 1;
  char *text = malloc(len + 1);
  if (!text) return 0;
  snprintf(text, len + 1, "%s%s", head, message);
  while (count && (count == LOG_ENTRIES || bytes + len + 1 > LOG_BYTES)) drop_oldest();
  ring[(first + count) % LOG_ENTRIES] = (entry){.text = text, .len = len};
  next_seq++;
  count++;
  bytes += len + 1;
  return len;
}

/* The registered callbacks as (function, data) pairs, so that they run without the lock. */
static size_t snapshot(struct CUlogsCallbackEntry_st **out) {
  size_t n = 0;
  for (struct CUlogsCallbackEntry_st *c = callbacks; c; c = c->next) n++;
  *out = n ? malloc(n * sizeof **out) : NULL;
  if (!*out) return 0;
  n = 0;
  for (struct CUlogsCallbackEntry_st *c = callbacks; c; c = c->next) (*out)[n++] = *c;
  return n;
}

void nvcu_logs_add(CUlogLevel level, const char *message) {
  struct CUlogsCallbackEntry_st *cbs = NULL;
  pthread_mutex_lock(&mu);
  size_t len = keep(level, message), n = len && !in_callback ? snapshot(&cbs) : 0;
  pthread_mutex_unlock(&mu);
  for (size_t i = 0; i < n; i++) {
    char copy[LOG_BYTES + 8]; /* the callback may write into what it is given */
    size_t m = (size_t)snprintf(copy, sizeof copy, "%s", message);
    in_callback = 1;
    cbs[i].fn(cbs[i].data, level, copy, m < sizeof copy ? m : sizeof copy - 1);
    in_callback = 0;
  }
  free(cbs);
}

CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void *userData,
                                CUlogsCallbackHandle *callback_out) {
  if (!callbackFunc) return CUDA_ERROR_INVALID_VALUE;
  struct CUlogsCallbackEntry_st *c = malloc(sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&mu);
  *c = (struct CUlogsCallbackEntry_st){
      .magic = CB_MAGIC, .fn = callbackFunc, .data = userData, .next = callbacks};
  callbacks = c;
  pthread_mutex_unlock(&mu);
  if (callback_out) *callback_out = c;
  return CUDA_SUCCESS;
}

/* A callback running on another thread may be called once more after this returns. */
CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback) {
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  for (struct CUlogsCallbackEntry_st **p = &callbacks; *p; p = &(*p)->next)
    if (*p == callback) {
      *p = callback->next;
      callback->magic = 0;
      free(callback);
      r = CUDA_SUCCESS;
      break;
    }
  pthread_mutex_unlock(&mu);
  return r;
}

CUresult cuLogsCurrent(CUlogIterator *iterator_out, unsigned int flags) {
  if (!iterator_out || flags) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  *iterator_out = next_seq;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

/* The kept entries from `iterator` on (all with NULL): the first one's index among the kept, and
 * whether older ones it asked for were dropped. Under the lock; 0 for an iterator past the end. */
static int range_from(const CUlogIterator *iterator, unsigned *from, int *truncated) {
  CUlogIterator oldest = next_seq - count, want = iterator ? *iterator : oldest;
  *truncated = 0, *from = 0;
  if ((CUlogIterator)(want - oldest) <= count) { /* kept, or the end */
    *from = want - oldest;
    return 1;
  }
  if ((CUlogIterator)(want - next_seq) < 0x80000000u) return 0; /* ahead of the end */
  *truncated = 1; /* behind the oldest kept: those were dropped */
  return 1;
}

static const char truncated_note[] =
    "[CUDA][W] earlier log messages were dropped (the log keeps the last "
    "25600 bytes)\n";

CUresult cuLogsDumpToFile(CUlogIterator *iterator, const char *pathToFile, unsigned int flags) {
  if (!pathToFile || flags) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  unsigned from;
  int truncated;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  FILE *f = range_from(iterator, &from, &truncated) ? fopen(pathToFile, "a") : NULL;
  if (f) {
    if (truncated) fputs(truncated_note, f);
    for (unsigned i = from; i < count; i++)
      fprintf(f, "%s\n", ring[(first + i) % LOG_ENTRIES].text);
    r = fclose(f) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (!r && iterator) *iterator = next_seq;
  }
  pthread_mutex_unlock(&mu);
  if (r) nvcu_log("cuLogsDumpToFile: cannot append the log to %s", pathToFile);
  return r;
}

static size_t entry_line(unsigned i) {
  return ring[(first + i) % LOG_ENTRIES].len + 1;
}

/* The first index from `from` on whose entries, to the newest, fit in `budget` bytes. */
static unsigned newest_fitting(unsigned from, size_t budget) {
  unsigned start = count;
  size_t used = 0;
  while (start > from && used + entry_line(start - 1) <= budget) used += entry_line(--start);
  return start;
}

/* Writes the entries from index `from` into `size` bytes, NUL-terminated: all of them, or the
 * newest that fit after a note saying older ones were left out (the note is dropped when not
 * even the newest entry fits beside it). Returns the bytes written, 0 when nothing fit. */
static size_t dump_tail(char *buffer, size_t size, unsigned from, int truncated) {
  const size_t note = sizeof truncated_note - 1;
  unsigned start = newest_fitting(from, size - 1);
  int with_note = truncated || start > from;
  if (with_note && size - 1 >= note && newest_fitting(from, size - 1 - note) < count)
    start = newest_fitting(from, size - 1 - note);
  else
    with_note = 0;
  if (start == count) return 0;
  size_t at = 0;
  if (with_note) memcpy(buffer, truncated_note, note), at = note;
  for (unsigned i = start; i < count; i++) {
    const entry *e = &ring[(first + i) % LOG_ENTRIES];
    memcpy(buffer + at, e->text, e->len);
    at += e->len;
    buffer[at++] = '\n';
  }
  buffer[at] = 0;
  return at;
}

CUresult cuLogsDumpToMemory(CUlogIterator *iterator, char *buffer, size_t *size,
                            unsigned int flags) {
  if (!buffer || !size || flags) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  unsigned from;
  int truncated;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (range_from(iterator, &from, &truncated)) {
    size_t written = *size ? dump_tail(buffer, *size, from, truncated) : 0;
    /* Nothing to say is a success; something that does not fit at all is not. */
    r = written || (from == count && !truncated) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (!written && *size) buffer[0] = 0;
    *size = written;
    if (!r && iterator) *iterator = next_seq;
  }
  pthread_mutex_unlock(&mu);
  return r;
}
