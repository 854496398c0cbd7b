/* Freed objects are kept, marked dead, for a while before their memory goes back to malloc: a
 * stale handle (use after free, double free) then reads the dead marker and gets a clear error
 * instead of touching someone else's object. */
#ifndef NVHCQ_HANDLE_H
#define NVHCQ_HANDLE_H

#include <stdint.h>

#define NVHCQ_DEAD_MAGIC 0x64656164u /* "dead" */

/* `object` starts with its uint32_t magic; it is marked dead and freed later. */
void nvhcq_retire(void *object);

/* For messages: "freed already (use after free or double free)" or "not made by nvhcq". */
static inline const char *nvhcq_handle_problem(uint32_t magic) {
  return magic == NVHCQ_DEAD_MAGIC ? "was freed already (a use after free or a double free)"
                                   : "was not made by nvhcq";
}

#endif
