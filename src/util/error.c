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

const char *nvhcq_last_error(void) {
  return last_message[0] ? last_message : "no error";
}

const char *nvhcq_status_name(nvhcq_status status) {
  switch (status) {
  case NVHCQ_SUCCESS:
    return "NVHCQ_SUCCESS";
  case NVHCQ_ERROR_INVALID_ARGUMENT:
    return "NVHCQ_ERROR_INVALID_ARGUMENT";
  case NVHCQ_ERROR_NO_DRIVER:
    return "NVHCQ_ERROR_NO_DRIVER";
  case NVHCQ_ERROR_NO_DEVICE:
    return "NVHCQ_ERROR_NO_DEVICE";
  case NVHCQ_ERROR_UNSUPPORTED:
    return "NVHCQ_ERROR_UNSUPPORTED";
  case NVHCQ_ERROR_OUT_OF_MEMORY:
    return "NVHCQ_ERROR_OUT_OF_MEMORY";
  case NVHCQ_ERROR_DRIVER:
    return "NVHCQ_ERROR_DRIVER";
  case NVHCQ_ERROR_TIMEOUT:
    return "NVHCQ_ERROR_TIMEOUT";
  case NVHCQ_ERROR_GPU_FAULT:
    return "NVHCQ_ERROR_GPU_FAULT";
  case NVHCQ_ERROR_INVALID_IMAGE:
    return "NVHCQ_ERROR_INVALID_IMAGE";
  case NVHCQ_ERROR_NOT_FOUND:
    return "NVHCQ_ERROR_NOT_FOUND";
  case NVHCQ_ERROR_LAUNCH_CHECK:
    return "NVHCQ_ERROR_LAUNCH_CHECK";
  case NVHCQ_ERROR_IO:
    return "NVHCQ_ERROR_IO";
  case NVHCQ_ERROR_COMPILE:
    return "NVHCQ_ERROR_COMPILE";
  case NVHCQ_ERROR_BUSY:
    return "NVHCQ_ERROR_BUSY";
  }
  return "NVHCQ_ERROR_UNKNOWN";
}
