/* The one clock nvhcq measures waits, timeouts and traced calls with. */
#ifndef NVHCQ_CLOCK_H
#define NVHCQ_CLOCK_H

#include <time.h>

/* Monotonic milliseconds (a vDSO call: no system call). */
static inline double nvhcq_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#endif
