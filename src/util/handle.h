/* Freed objects are kept, marked dead, for a while before their memory goes back to malloc: a
 * stale handle (use after free, double free) then reads the dead marker and gets a clear error
 * instead of touching someone else's object. */
#ifndef NVHCQ_HANDLE_H
#define NVHCQ_HANDLE_H

#include <stdint.h>

#include "util/error.h"

#define NVHCQ_DEAD_MAGIC 0x64656164u /* "dead" */

/* `object` starts with its uint32_t magic; it is marked dead and freed later. */
void nvhcq_retire(void *object);

/* NVHCQ_SUCCESS if `object` is a live `kind` ("device") with magic `want`. Otherwise
 * NVHCQ_ERROR_INVALID_ARGUMENT, saying it is NULL, was not made by nvhcq, or is dead: `dead_text`
 * says how such an object dies ("was closed already"), NULL for "was freed already". */
nvhcq_status nvhcq_handle_check(const void *object, uint32_t want, const char *kind,
                                const char *dead_text) NVHCQ_MUST_CHECK;

#endif
