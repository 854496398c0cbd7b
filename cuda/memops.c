/* Stream memory operations: waits on and writes of 32- and 64-bit values in a stream's order, one
 * at a time or batched, run on the compute queue as nvhcq's waits on and writes of memory, or
 * captured as a graph's batch memory operation node (and run so when the graph is launched). */
#include "internal.h"

/* One operation, checked and with its address as the GPU sees it. */
typedef struct memop {
  int kind; /* CU_STREAM_MEM_OP_* */
  uint64_t gpu, value;
  uint32_t flags; /* nvhcq's: condition and NVHCQ_VALUE_64BIT */
  int barrier;    /* a memory barrier goes with it (a wait's FLUSH, a write's default) */
} memop;

/* Pinned host memory may be given by its host address (one address space): the GPU's mapping of
 * it is used. Any other address is taken as the GPU's (device memory, module globals); one that
 * is not mapped faults the channel and is reported by the call that waits for the stream. */
static CUresult gpu_address(CUdeviceptr addr, unsigned size, uint64_t *out) {
  if (addr == 0 || addr % size) {
    nvcu_log("stream memory operation: address 0x%llx is not %u-byte aligned", addr, size);
    return CUDA_ERROR_INVALID_VALUE;
  }
  nvcu_alloc *a = nvcu_alloc_find(addr);
  if (a && size > a->size - (addr - a->base)) return CUDA_ERROR_INVALID_VALUE;
  *out = a && a->host ? nvhcq_buffer_gpu_address(a->buf) + (addr - a->base) : addr;
  return CUDA_SUCCESS;
}

static const uint32_t conditions[] = {
    [CU_STREAM_WAIT_VALUE_GEQ] = NVHCQ_WAIT_GEQ,
    [CU_STREAM_WAIT_VALUE_EQ] = NVHCQ_WAIT_EQ,
    [CU_STREAM_WAIT_VALUE_AND] = NVHCQ_WAIT_AND,
    [CU_STREAM_WAIT_VALUE_NOR] = NVHCQ_WAIT_NOR,
};

static CUresult check_wait(CUdeviceptr addr, uint64_t value, unsigned int flags, int wide,
                           memop *out) {
  unsigned cond = flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH;
  if (cond > CU_STREAM_WAIT_VALUE_NOR) return CUDA_ERROR_INVALID_VALUE;
  *out = (memop){.kind = wide ? CU_STREAM_MEM_OP_WAIT_VALUE_64 : CU_STREAM_MEM_OP_WAIT_VALUE_32,
                 .value = wide ? value : (uint32_t)value,
                 .flags = conditions[cond] | (wide ? NVHCQ_VALUE_64BIT : 0),
                 .barrier = (flags & CU_STREAM_WAIT_VALUE_FLUSH) != 0};
  return gpu_address(addr, wide ? 8 : 4, &out->gpu);
}

static CUresult check_write(CUdeviceptr addr, uint64_t value, unsigned int flags, int wide,
                            memop *out) {
  if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) return CUDA_ERROR_INVALID_VALUE;
  *out = (memop){.kind = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32,
                 .value = wide ? value : (uint32_t)value,
                 .flags = wide ? NVHCQ_VALUE_64BIT : 0,
                 .barrier = !(flags & CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)};
  return gpu_address(addr, wide ? 8 : 4, &out->gpu);
}

/* A batch entry as a memop; `v2` allows the barrier operation (the _v2 calls alone have it). */
static CUresult check_param(const CUstreamBatchMemOpParams *p, int v2, memop *out) {
  switch (p->operation) {
  case CU_STREAM_MEM_OP_WAIT_VALUE_32:
  case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
    int wide = p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
    return check_wait(p->waitValue.address, wide ? p->waitValue.value64 : p->waitValue.value,
                      p->waitValue.flags, wide, out);
  }
  case CU_STREAM_MEM_OP_WRITE_VALUE_32:
  case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
    int wide = p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
    return check_write(p->writeValue.address, wide ? p->writeValue.value64 : p->writeValue.value,
                       p->writeValue.flags, wide, out);
  }
  case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
    if (p->flushRemoteWrites.flags) return CUDA_ERROR_INVALID_VALUE;
    *out = (memop){.kind = p->operation, .barrier = 1};
    return CUDA_SUCCESS;
  case CU_STREAM_MEM_OP_BARRIER:
    if (!v2 || p->memoryBarrier.flags > CU_STREAM_MEMORY_BARRIER_TYPE_GPU)
      return CUDA_ERROR_INVALID_VALUE;
    *out = (memop){.kind = p->operation, .barrier = 1};
    return CUDA_SUCCESS;
  default:
    nvcu_log("cuStreamBatchMemOp: operation %d unknown", (int)p->operation);
    return CUDA_ERROR_INVALID_VALUE;
  }
}

/* Every write has completed work before it behind it anyway (the host's release waits for idle);
 * the barrier adds the caches' invalidation that later kernels need to see what others wrote. */
static nvhcq_status record(nvhcq_queue *q, const memop *m) {
  nvhcq_status s = NVHCQ_SUCCESS;
  int wait = m->kind == CU_STREAM_MEM_OP_WAIT_VALUE_32 || m->kind == CU_STREAM_MEM_OP_WAIT_VALUE_64;
  int write =
      m->kind == CU_STREAM_MEM_OP_WRITE_VALUE_32 || m->kind == CU_STREAM_MEM_OP_WRITE_VALUE_64;
  if (wait) s = nvhcq_queue_gpu_wait_value(q, m->gpu, m->value, m->flags);
  if (!s && m->barrier) s = nvhcq_queue_memory_barrier(q);
  if (!s && write) s = nvhcq_queue_write_value(q, m->gpu, m->value, m->flags);
  return s;
}

/* At most 255 operations (CUDA's limit); all are checked before any is recorded. */
#define MAX_BATCH 255

/* The operations in the stream's order, in one submission of the compute queue: the engines'
 * timelines order everything after them behind them. */
static CUresult record_all(nvcu_device *d, struct CUstream_st *st, const memop *ops, unsigned n) {
  if (n == 0) return CUDA_SUCCESS;
  nvhcq_queue *q = nvcu_engine_begin(d, NVCU_COMPUTE);
  nvhcq_status s = NVHCQ_SUCCESS;
  for (unsigned i = 0; i < n && !s; i++) s = record(q, &ops[i]);
  if (s) return nvcu_status(s, "a stream memory operation");
  return nvcu_engine_end(d, NVCU_COMPUTE, st);
}

/* Checked, then run, or in a captured stream a batch memory operation node (what CUDA captures
 * them as), holding a copy of the parameters. `v2` allows the barrier operation. */
static CUresult submit(CUstream stream, unsigned count, const CUstreamBatchMemOpParams *p, int v2) {
  struct CUstream_st *st;
  nvcu_device *d;
  memop ops[MAX_BATCH];
  CUresult r = nvcu_check_init();
  if (!r) r = nvcu_stream_get(stream, &st);
  if (!r) r = nvcu_device_get(st->device, &d);
  for (unsigned i = 0; i < count && !r; i++) r = check_param(&p[i], v2, &ops[i]);
  if (r || count == 0) return r;
  if (st->capture) {
    nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
                  .args = (uint8_t *)p,
                  .args_size = count * (uint32_t)sizeof *p};
    return nvcu_stream_op(stream, &op);
  }
  return record_all(d, st, ops, count);
}

CUresult nvcu_memops_check(unsigned count, const CUstreamBatchMemOpParams *p, unsigned flags) {
  memop m;
  if (flags || count == 0 || count > MAX_BATCH || !p) {
    nvcu_log("a batch memory operation node: %u operations (1 to %u), flags 0x%x (must be 0)",
             count, MAX_BATCH, flags);
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned i = 0; i < count; i++) {
    CUresult r = check_param(&p[i], 1, &m);
    if (r) return r;
  }
  return CUDA_SUCCESS;
}

CUresult nvcu_memops_run(nvcu_device *d, struct CUstream_st *st, const nvcu_op *op) {
  const CUstreamBatchMemOpParams *p = (const CUstreamBatchMemOpParams *)op->args;
  unsigned n = op->args_size / (unsigned)sizeof *p;
  memop ops[MAX_BATCH];
  CUresult r = n <= MAX_BATCH ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  /* checked again: an allocation the node names may have gone since */
  for (unsigned i = 0; i < n && !r; i++) r = check_param(&p[i], 1, &ops[i]);
  return r ? r : record_all(d, st, ops, n);
}

static CUresult one(CUstream stream, CUdeviceptr addr, uint64_t value, unsigned int flags, int wide,
                    int write) {
  CUstreamBatchMemOpParams p = {.pad = {0}};
  CUstreamMemOpValueParams *v = write ? &p.writeValue : &p.waitValue;
  v->operation = write ? (wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32)
                       : (wide ? CU_STREAM_MEM_OP_WAIT_VALUE_64 : CU_STREAM_MEM_OP_WAIT_VALUE_32);
  v->address = addr;
  if (wide)
    v->value64 = value;
  else
    v->value = (cuuint32_t)value;
  v->flags = flags;
  NVCU_LOCK();
  CUresult r = submit(stream, 1, &p, 1);
  NVCU_UNLOCK();
  return r;
}

CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                unsigned int flags) {
  return one(stream, addr, value, flags, 0, 0);
}

CUresult cuStreamWaitValue64_v2(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                unsigned int flags) {
  return one(stream, addr, value, flags, 1, 0);
}

CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                 unsigned int flags) {
  return one(stream, addr, value, flags, 0, 1);
}

CUresult cuStreamWriteValue64_v2(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                 unsigned int flags) {
  return one(stream, addr, value, flags, 1, 1);
}

static CUresult batch(CUstream stream, unsigned int count, const CUstreamBatchMemOpParams *p,
                      unsigned int flags, int v2) {
  if (flags || count > MAX_BATCH || (count && !p)) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = submit(stream, count, p, v2);
  NVCU_UNLOCK();
  return r;
}

CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count,
                               CUstreamBatchMemOpParams *paramArray, unsigned int flags) {
  return batch(stream, count, paramArray, flags, 1);
}

/* The first versions (CUDA 8 and 9): the same operations, without the barrier. */
static CUresult batch_v1(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
                         unsigned int flags) {
  return batch(stream, count, paramArray, flags, 0);
}

NVCU_ALIAS(cuStreamWaitValue32, cuStreamWaitValue32_v2)
NVCU_ALIAS(cuStreamWaitValue64, cuStreamWaitValue64_v2)
NVCU_ALIAS(cuStreamWriteValue32, cuStreamWriteValue32_v2)
NVCU_ALIAS(cuStreamWriteValue64, cuStreamWriteValue64_v2)
NVCU_ALIAS(cuStreamBatchMemOp, batch_v1)
NVCU_ALIAS(cuStreamWaitValue32_ptsz, cuStreamWaitValue32_v2)
NVCU_ALIAS(cuStreamWaitValue64_ptsz, cuStreamWaitValue64_v2)
NVCU_ALIAS(cuStreamWriteValue32_ptsz, cuStreamWriteValue32_v2)
NVCU_ALIAS(cuStreamWriteValue64_ptsz, cuStreamWriteValue64_v2)
NVCU_ALIAS(cuStreamBatchMemOp_ptsz, batch_v1)
NVCU_ALIAS(cuStreamWaitValue32_v2_ptsz, cuStreamWaitValue32_v2)
NVCU_ALIAS(cuStreamWaitValue64_v2_ptsz, cuStreamWaitValue64_v2)
NVCU_ALIAS(cuStreamWriteValue32_v2_ptsz, cuStreamWriteValue32_v2)
NVCU_ALIAS(cuStreamWriteValue64_v2_ptsz, cuStreamWriteValue64_v2)
NVCU_ALIAS(cuStreamBatchMemOp_v2_ptsz, cuStreamBatchMemOp_v2)
