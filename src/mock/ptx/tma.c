/* The PTX interpreter's tensor memory accelerator: cp.async.bulk.tensor tile-mode loads from
 * global memory into shared memory through a 128-byte tensor map (abi/tensor_map.h, the fields
 * nvhcq's encoder writes), with the map's swizzle, out-of-bounds fill and multicast to a
 * cluster's blocks. A copy completes as it issues: its bytes are in shared memory and counted on
 * the mbarrier (complete_tx) before the next instruction. */
#include "abi/tensor_map.h"
#include "exec.h"

#include <stdio.h>
#include <string.h>

/* A decoded tiled tensor map. */
typedef struct tmap {
  uint64_t address;
  uint32_t rank, esize, swizzle_bytes, nan_fill;
  uint64_t dims[TMA_MAX_RANK], strides[TMA_MAX_RANK]; /* strides in bytes; [0] is esize */
  uint32_t box[TMA_MAX_RANK], estride[TMA_MAX_RANK];
  uint32_t count[TMA_MAX_RANK]; /* elements the box holds along each dimension */
} tmap;

static const char *decode(const uint32_t *w, tmap *m) {
  uint32_t f = w[TMA_DW_FORMAT], type = f >> TMA_TYPE_SHIFT & TMA_TYPE_MASK;
  if (f >> TMA_IM2COL_BIT & 1) return "an im2col tensor map (the mock copies tiles only)";
  if (f >> TMA_INTERLEAVE_SHIFT & 3) return "an interleaved tensor map (the mock has none)";
  if (type >= TMA_HW_TYPES) return "a tensor map with an unknown element type";
  memset(m, 0, sizeof *m);
  m->address = (uint64_t)w[TMA_DW_ADDRESS_HI] << 32 | w[TMA_DW_ADDRESS_LO];
  m->rank = (f >> TMA_RANK_SHIFT & 7) + 1;
  m->esize = tma_hw_type_bytes(type);
  m->swizzle_bytes = tma_swizzle_bytes(f >> TMA_SWIZZLE_SHIFT & 3);
  m->nan_fill = f >> TMA_NAN_FILL_BIT & 1;
  if (m->rank > TMA_MAX_RANK) return "a tensor map of rank above 5";
  m->strides[0] = m->esize;
  for (uint32_t i = 0; i < m->rank; i++) {
    m->dims[i] = (uint64_t)w[TMA_DW_DIMS + i] + 1;
    m->estride[i] = (w[TMA_DW_ELEM_STRIDES] >> (3 * i) & 7) + 1;
    m->box[i] = i ? (w[TMA_DW_BOX] >> (8 * (i - 1)) & 0xff) + 1
                  : (w[TMA_DW_ELEM_STRIDES] >> TMA_BOX0_SHIFT) + 1;
    /* Every estride-th element of the box's box[i], the first included. */
    m->count[i] = (m->box[i] + m->estride[i] - 1) / m->estride[i];
    if (i)
      m->strides[i] = (uint64_t)w[TMA_DW_STRIDES + i - 1] << 4 |
                      (uint64_t)(w[TMA_DW_STRIDES_HI] >> (4 * (i - 1)) & 0xf) << 36;
  }
  return NULL;
}

/* What an element outside the tensor reads as: zero, or NaN with the map's NaN fill. */
static void fill(const tmap *m, unsigned char *dst, uint32_t elements) {
  uint64_t nan = m->esize == 2 ? 0x7fffu : m->esize == 4 ? 0x7fffffffu : 0x7fffffffffffffffu;
  uint64_t v = m->nan_fill && m->esize > 1 ? nan : 0;
  for (uint32_t i = 0; i < elements; i++) memcpy(dst + (size_t)i * m->esize, &v, m->esize);
}

typedef struct copy {
  ptx_block *b;
  ptx_thread *t;
  const ptx_insn *in;
  const tmap *m;
  int64_t coord[TMA_MAX_RANK]; /* the box's first element */
} copy;

/* Element j of the box's row along dimension 0, whose other indices are idx: its global
 * address, or false when it lies outside the tensor. */
static bool element_address(const copy *c, const uint32_t *idx, uint32_t j, uint64_t *a) {
  const tmap *m = c->m;
  *a = m->address;
  for (uint32_t d = 0; d < m->rank; d++) {
    int64_t x = c->coord[d] + (int64_t)(d ? idx[d] : j) * m->estride[d];
    if (x < 0 || (uint64_t)x >= m->dims[d]) return false;
    *a += (uint64_t)x * m->strides[d];
  }
  return true;
}

/* One row of the box (its elements along dimension 0) from global memory into row. */
static bool read_row(const copy *c, const uint32_t *idx, unsigned char *row) {
  const tmap *m = c->m;
  uint64_t a, last;
  uint32_t n = m->count[0];
  if (m->estride[0] == 1 && element_address(c, idx, 0, &a) &&
      element_address(c, idx, n - 1, &last)) {
    const void *src = ptx_space_ptr(c->b, c->t, SP_GLOBAL, a, (size_t)n * m->esize, 0);
    if (src) return memcpy(row, src, (size_t)n * m->esize), true;
  }
  for (uint32_t j = 0; j < n; j++) {
    unsigned char *dst = row + (size_t)j * m->esize;
    if (!element_address(c, idx, j, &a)) {
      fill(m, dst, 1);
      continue;
    }
    const void *src = ptx_space_ptr(c->b, c->t, SP_GLOBAL, a, m->esize, 0);
    if (!src) {
      ptx_fault(c->b, c->t, c->in, NVHCQ_PTX_FAULT_ADDRESS, a, 0,
                "cp.async.bulk.tensor read outside any mapping");
      return false;
    }
    memcpy(dst, src, m->esize);
  }
  return true;
}

/* Bytes at the box's dense offset `off` in shared memory, through the swizzle: its 16-byte chunk
 * index (address bits 6:4, fewer for 64 and 32 bytes) XORed with the row of its pattern (bits
 * 9:7), on the shared-memory address as the hardware does. */
static void put(unsigned char *shared, uint64_t off, const unsigned char *src, size_t len,
                uint32_t swizzle_bytes) {
  if (!swizzle_bytes) return (void)memcpy(shared + off, src, len);
  uint64_t mask = swizzle_bytes / 16 - 1;
  while (len) {
    size_t piece = 16 - (size_t)(off & 15);
    if (piece > len) piece = len;
    memcpy(shared + (off ^ ((off >> 7 & mask) << 4)), src, piece);
    off += piece, src += piece, len -= piece;
  }
}

/* The box's rows, dimension 0 innermost, into each destination block at offset dst. */
static bool copy_box(const copy *c, ptx_block **dst_blocks, uint32_t ndst, uint64_t dst) {
  const tmap *m = c->m;
  unsigned char row[256 * 8];
  size_t row_bytes = (size_t)m->count[0] * m->esize, rows = 1;
  for (uint32_t d = 1; d < m->rank; d++) rows *= m->count[d];
  for (size_t r = 0; r < rows; r++) {
    uint32_t idx[TMA_MAX_RANK] = {0};
    size_t rest = r;
    for (uint32_t d = 1; d < m->rank; d++)
      idx[d] = (uint32_t)(rest % m->count[d]), rest /= m->count[d];
    if (!read_row(c, idx, row)) return false;
    for (uint32_t i = 0; i < ndst; i++)
      put(dst_blocks[i]->shared, dst + r * row_bytes, row, row_bytes, m->swizzle_bytes);
  }
  return true;
}

static bool fail(const copy *c, nvhcq_ptx_fault_kind kind, uint64_t a, const char *what) {
  ptx_fault(c->b, c->t, c->in, kind, a, kind != NVHCQ_PTX_FAULT_UNSUPPORTED, what);
  return false;
}

/* The tensor map the operand [map, {coords}] names, and the coordinates. */
static bool read_map(copy *c, tmap *m) {
  const ptx_operand *o = &c->in->ops[1];
  uint64_t a = ptx_operand_address(c->b, c->t, o);
  if (a % 64) return fail(c, NVHCQ_PTX_FAULT_MISALIGNED, a, "tensor map not 64-byte aligned");
  const void *p = ptx_space_ptr(c->b, c->t, SP_NONE, a, 128, 0);
  if (!p) return fail(c, NVHCQ_PTX_FAULT_ADDRESS, a, "tensor map outside any mapping");
  uint32_t w[32];
  memcpy(w, p, sizeof w);
  const char *why = decode(w, m);
  if (why) return fail(c, NVHCQ_PTX_FAULT_UNSUPPORTED, 0, why);
  if (m->rank != c->in->shape || o->nvec != m->rank)
    return fail(c, NVHCQ_PTX_FAULT_UNSUPPORTED, 0,
                "cp.async.bulk.tensor dimensions differ from its tensor map's rank");
  for (uint32_t d = 0; d < m->rank; d++)
    c->coord[d] = (int32_t)(uint32_t)c->t->regs[ptx_list_reg(c->b, o, d)];
  c->m = m;
  return true;
}

/* The blocks a copy lands in: the one its shared::cluster address names, or (multicast) each
 * block of the mask, at the same offset. */
static uint32_t destinations(const copy *c, uint64_t dst, ptx_block **out) {
  ptx_cluster *cl = c->b->cluster;
  if (!(c->in->flags & F_TMA_MULTICAST)) {
    uint64_t rank = dst >> PTX_CLUSTER_SHIFT;
    if (rank > cl->count) return 0;
    out[0] = rank ? &cl->blocks[rank - 1] : c->b;
    return 1;
  }
  uint32_t mask = (uint32_t)ptx_read(c->b, c->t, c->in, 3, PTX_TYPE(TK_U, 2)) & 0xffff, n = 0;
  for (uint32_t r = 0; r < cl->count && r < 16; r++)
    if (mask >> r & 1) out[n++] = &cl->blocks[r];
  return n;
}

void ptx_tma_load(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  copy c = {.b = b, .t = t, .in = in};
  tmap m;
  if (!read_map(&c, &m)) return;
  uint64_t dst = ptx_operand_address(b, t, &in->ops[0]) & ((1u << PTX_CLUSTER_SHIFT) - 1);
  uint64_t bar = ptx_operand_address(b, t, &in->ops[2]) & ((1u << PTX_CLUSTER_SHIFT) - 1);
  uint64_t bytes = m.esize;
  for (uint32_t d = 0; d < m.rank; d++) bytes *= m.count[d];
  ptx_block *blocks[PTX_CLUSTER_MAX];
  uint32_t n = destinations(&c, ptx_operand_address(b, t, &in->ops[0]), blocks);
  if (!n) {
    fail(&c, NVHCQ_PTX_FAULT_ADDRESS, dst, "cp.async.bulk.tensor to no block of the cluster");
    return;
  }
  if (dst % 128) {
    fail(&c, NVHCQ_PTX_FAULT_MISALIGNED, dst,
         "cp.async.bulk.tensor destination not 128-byte aligned");
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    if (dst + bytes > blocks[i]->shared_size || bar % 8 || bar + 8 > blocks[i]->shared_size) {
      fail(&c, NVHCQ_PTX_FAULT_ADDRESS, dst,
           "cp.async.bulk.tensor box or mbarrier outside shared memory");
      return;
    }
  if (!copy_box(&c, blocks, n, dst)) return;
  for (uint32_t i = 0; i < n; i++)
    if (!ptx_mbarrier_complete_tx(b, t, in, blocks[i]->shared + bar, (uint32_t)bytes)) return;
}
