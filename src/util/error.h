/* Error reporting shared by every layer: a status plus a thread-local message. */
#ifndef NVHCQ_ERROR_H
#define NVHCQ_ERROR_H

#include "nvhcq.h"

#if defined(__GNUC__)
#define NVHCQ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define NVHCQ_MUST_CHECK   __attribute__((warn_unused_result))
#else
#define NVHCQ_PRINTF(a, b)
#define NVHCQ_MUST_CHECK
#endif

/* Records the message for nvhcq_last_error() and returns `status` so callers can write
 * `return nvhcq_fail(NVHCQ_ERROR_..., "...")`. */
nvhcq_status nvhcq_fail(nvhcq_status status, const char *fmt, ...) NVHCQ_PRINTF(2, 3);

/* Prepends context ("opening GPU 0: ") to the current message, keeping its status. */
nvhcq_status nvhcq_fail_context(nvhcq_status status, const char *fmt, ...) NVHCQ_PRINTF(2, 3);

void nvhcq_clear_error(void);

/* The message as it stands, kept across a step whose failure is expected and handled (a probe,
 * an optional query): restored afterwards, the caller's last error stays the last failed call's. */
typedef struct nvhcq_error_saved {
  char text[2048];
} nvhcq_error_saved;
void nvhcq_error_save(nvhcq_error_saved *saved);
void nvhcq_error_restore(const nvhcq_error_saved *saved);

#define NVHCQ_TRY(expr)                                                                            \
  do {                                                                                             \
    nvhcq_status try_status_ = (expr);                                                             \
    if (try_status_ != NVHCQ_SUCCESS) return try_status_;                                          \
  } while (0)

#endif
