/* The per-thread message behind nvhcq_fail and nvhcq_last_error, and the status names. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_message[2048];

nvhcq_status nvhcq_fail(nvhcq_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_message, sizeof last_message, fmt, ap);
  va_end(ap);
  return status;
}

nvhcq_status nvhcq_fail_context(nvhcq_status status, const char *fmt, ...) {
  char prefix[512], old[sizeof last_message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, last_message, sizeof old);
  size_t n = strlen(prefix);
  if (n > sizeof last_message - 3) n = sizeof last_message - 3;
  memcpy(last_message, prefix, n);
  memcpy(last_message + n, ": ", 2);
  size_t room = sizeof last_message - n - 3, m = strlen(old);
  if (m > room) m = room;
  memcpy(last_message + n + 2, old, m);
  last_message[n + 2 + m] = '\0';
  return status;
}

void nvhcq_clear_error(void) {
  last_message[0] = '\0';
}

void nvhcq_error_save(nvhcq_error_saved *saved) {
  _Static_assert(sizeof saved->text == sizeof last_message, "the whole message is kept");
  memcpy(saved->text, last_message, sizeof last_message);
}

void nvhcq_error_restore(const nvhcq_error_saved *saved) {
  memcpy(last_message, saved->text, sizeof last_message);
}

const char *nvhcq_last_error(void) {
  return last_message[0] ? last_message : "no error";
}

/* The values the enum had when it was written out by hand: the list keeps them. */
_Static_assert(NVHCQ_SUCCESS == 0 && NVHCQ_ERROR_INVALID_ARGUMENT == 1 && NVHCQ_ERROR_DRIVER == 6 &&
                   NVHCQ_ERROR_GPU_FAULT == 8 && NVHCQ_ERROR_BUSY == 14,
               "nvhcq_status values");

const char *nvhcq_status_name(nvhcq_status status) {
  static const char *const names[] = {
#define NVHCQ_STATUS_NAME_(name) [name] = #name,
      NVHCQ_STATUS_LIST(NVHCQ_STATUS_NAME_)
#undef NVHCQ_STATUS_NAME_
  };
  if ((unsigned)status < sizeof names / sizeof names[0]) return names[status];
  return "NVHCQ_ERROR_UNKNOWN";
}
