/* The host side of device printf and assert: a record of the FIFO (syscalls_abi.h) checked and
 * formatted as text, with the C library's snprintf doing each conversion. No device needed. */
#ifndef NVHCQ_PRINT_H
#define NVHCQ_PRINT_H

#include <stddef.h>
#include <stdint.h>

/* Whether the `size` bytes at rec hold a well-formed record of its kind (its own size field is
 * not read: the FIFO passes the size it read). */
int nvhcq_print_record_ok(const uint8_t *rec, uint32_t size);

/* Formats a printf record into out (cap bytes, NUL-terminated, cut to fit); the length written.
 * A malformed conversion, or one whose argument the record lacks, is copied literally. */
size_t nvhcq_print_format(const uint8_t *rec, uint32_t size, char *out, size_t cap);

/* CUDA's line for an assert record: "file:line: function: block: [x,y,z], thread: [x,y,z]
 * Assertion `message` failed.\n". */
size_t nvhcq_print_assert(const uint8_t *rec, uint32_t size, char *out, size_t cap);

#endif
