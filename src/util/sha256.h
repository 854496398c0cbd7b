/* SHA-256 (FIPS 180-4), for cache keys and cache-entry checksums. */
#ifndef NVHCQ_SHA256_H
#define NVHCQ_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct nvhcq_sha256 {
  uint32_t state[8];
  uint64_t length; /* bytes hashed so far */
  uint8_t block[64];
  size_t used;
} nvhcq_sha256;

void nvhcq_sha256_init(nvhcq_sha256 *h);
void nvhcq_sha256_update(nvhcq_sha256 *h, const void *data, size_t size);
void nvhcq_sha256_final(nvhcq_sha256 *h, uint8_t digest[32]);
/* The digest of one buffer. */
void nvhcq_sha256_of(const void *data, size_t size, uint8_t digest[32]);
/* Lowercase hex of a digest into out[65]. */
void nvhcq_sha256_hex(const uint8_t digest[32], char out[65]);

#endif
