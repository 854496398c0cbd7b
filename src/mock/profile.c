/* The GPUs the mock can be (NVHCQ_MOCK_GPU=a100|rtx4090|h200|b200, the H200 by default): each
 * one's name, PCI id, SM version and layout, memory and the classes its driver offers; and how
 * many of them it probes (NVHCQ_MOCK_GPUS, 1 by default). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock/internal.h"

/* TPCs per GPC as the masks say (2 SMs each): the SM counts of the shipping parts. */
static const uint8_t h200_tpcs[] = {9, 9, 8, 8, 8, 8, 8, 8};             /* 132 SMs */
static const uint8_t a100_tpcs[] = {8, 8, 8, 8, 8, 7, 7};                /* 108 SMs */
static const uint8_t rtx4090_tpcs[] = {6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5}; /* 128 SMs */
static const uint8_t b200_tpcs[] = {10, 10, 9, 9, 9, 9, 9, 9};           /* 148 SMs */

#define TPCS(a) a, sizeof a

static const mock_profile profiles[] = {
    {"h200", "NVIDIA H200 (nvhcq mock)", 0x2335, 0x900, 64, TPCS(h200_tpcs), 143771ull * 1024,
     HOPPER_USERMODE_A, HOPPER_CHANNEL_GPFIFO_A, HOPPER_COMPUTE_A, HOPPER_DMA_COPY_A},
    {"a100", "NVIDIA A100-SXM4-80GB (nvhcq mock)", 0x20b2, 0x800, 64, TPCS(a100_tpcs),
     81920ull * 1024, AMPERE_USERMODE_A, AMPERE_CHANNEL_GPFIFO_A, AMPERE_COMPUTE_A,
     AMPERE_DMA_COPY_A},
    /* Ada keeps Ampere's usermode and GPFIFO classes and the second Ampere copy class. */
    {"rtx4090", "NVIDIA GeForce RTX 4090 (nvhcq mock)", 0x2684, 0x809, 48, TPCS(rtx4090_tpcs),
     24564ull * 1024, AMPERE_USERMODE_A, AMPERE_CHANNEL_GPFIFO_A, ADA_COMPUTE_A, AMPERE_DMA_COPY_B},
    /* GB100 (B200) has BLACKWELL_COMPUTE_A; BLACKWELL_COMPUTE_B is the GB20x parts'. */
    {"b200", "NVIDIA B200 (nvhcq mock)", 0x2901, 0xa00, 64, TPCS(b200_tpcs), 183359ull * 1024,
     BLACKWELL_USERMODE_A, BLACKWELL_CHANNEL_GPFIFO_A, BLACKWELL_COMPUTE_A, BLACKWELL_DMA_COPY_A},
};

const mock_profile *mock_gpu = &profiles[0];

/* NVHCQ_MOCK_GPUS=n: n identical GPUs, each with its own UUID, PCI bus and memory. */
static void select_gpu_count(void) {
  const char *env = getenv("NVHCQ_MOCK_GPUS");
  long n = env && *env ? strtol(env, NULL, 10) : 1;
  if (n < 1 || n > MOCK_MAX_GPUS) {
    fprintf(stderr, "nvhcq mock: NVHCQ_MOCK_GPUS=%s is not 1..%d; one GPU it is\n", env,
            MOCK_MAX_GPUS);
    n = 1;
  }
  nvhcq_mock.gpus = (uint32_t)n;
}

static int select_profile(void);

/* NVHCQ_MOCK_TPCS=a,b,...: the chosen GPU with that many TPCs in each GPC instead (at most 32
 * GPCs of 1..9 TPCs): lets tests meet layouts no shipping part has, such as GPCs too small for a
 * cluster. */
static mock_profile custom;
static uint8_t custom_tpcs[32];

static void apply_tpc_layout(void) {
  const char *env = getenv("NVHCQ_MOCK_TPCS");
  if (!env || !*env) return;
  size_t n = 0;
  for (const char *p = env; *p && n < sizeof custom_tpcs;) {
    char *end;
    long t = strtol(p, &end, 10);
    if (end == p || t < 1 || t > 9) {
      fprintf(stderr, "nvhcq mock: NVHCQ_MOCK_TPCS=%s is not a list of 1..9; kept %s's layout\n",
              env, mock_gpu->key);
      return;
    }
    custom_tpcs[n++] = (uint8_t)t;
    p = *end == ',' ? end + 1 : end;
  }
  custom = *mock_gpu;
  custom.tpcs = custom_tpcs, custom.gpcs = n;
  mock_gpu = &custom;
}

int mock_profile_select(void) {
  int r = select_profile();
  apply_tpc_layout();
  return r;
}

static int select_profile(void) {
  select_gpu_count();
  const char *want = getenv("NVHCQ_MOCK_GPU");
  if (!want || !*want) want = "h200";
  for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
    if (!strcmp(profiles[i].key, want)) {
      mock_gpu = &profiles[i];
      return 0;
    }
  fprintf(stderr,
          "nvhcq mock: NVHCQ_MOCK_GPU=%s is not a100, rtx4090, h200 or b200; an H200 it is\n",
          want);
  mock_gpu = &profiles[0];
  return -1;
}

uint32_t mock_profile_sms(void) {
  uint32_t tpcs = 0;
  for (size_t i = 0; i < mock_gpu->gpcs; i++) tpcs += mock_gpu->tpcs[i];
  return tpcs * 2;
}

int mock_is_gpfifo_class(uint32_t c) {
  return c == AMPERE_CHANNEL_GPFIFO_A || c == HOPPER_CHANNEL_GPFIFO_A ||
         c == BLACKWELL_CHANNEL_GPFIFO_A || c == BLACKWELL_CHANNEL_GPFIFO_B;
}
