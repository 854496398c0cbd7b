/* The PTX interpreter's operands and memory: registers, special registers, state spaces. */
#include "exec.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void ptx_fault(ptx_block *b, const ptx_thread *t, const ptx_insn *in, nvhcq_ptx_fault_kind kind,
               uint64_t address, int write, const char *what) {
  if (b->status != NVHCQ_PTX_OK) return;
  b->status = kind == NVHCQ_PTX_FAULT_UNSUPPORTED ? NVHCQ_PTX_UNSUPPORTED : NVHCQ_PTX_FAULT;
  if (!b->fault || b->fault->kind != NVHCQ_PTX_FAULT_NONE) return; /* a cluster peer's was first */
  nvhcq_ptx_fault *f = b->fault;
  f->kind = kind;
  f->address = address;
  f->write = write;
  f->line = in ? in->line : 0;
  memcpy(f->block, b->ctaid, sizeof f->block);
  memcpy(f->thread, t->tid, sizeof f->thread);
  snprintf(f->what, sizeof f->what, "%s", what);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cluster_special(const ptx_block *b, const ptx_operand *o) {
  const ptx_cluster *cl = b->cluster;
  switch (o->reg) {
  case SR_CLUSTER_CTARANK:
    return b->rank;
  case SR_CLUSTER_NCTARANK:
    return cl->count;
  case SR_CLUSTERID:
    return cl->id[o->component];
  case SR_NCLUSTERID:
    return b->cfg->grid[o->component] / cl->dim[o->component];
  case SR_CLUSTER_CTAID:
    return b->cluster_ctaid[o->component];
  case SR_CLUSTER_NCTAID:
    return cl->dim[o->component];
  default: /* %is_explicit_cluster */
    return b->cfg->cluster[0] != 0;
  }
}

/* A block's SM: the grid's SMs taken in turn by its blocks. */
static uint32_t smid(const ptx_block *b) {
  const nvhcq_ptx_launch_config *c = b->cfg;
  uint64_t linear =
      b->ctaid[0] + (uint64_t)c->grid[0] * (b->ctaid[1] + (uint64_t)c->grid[1] * b->ctaid[2]);
  return c->sm_count && c->sms ? c->sms[linear % c->sm_count] : 0;
}

static uint64_t special(const ptx_block *b, const ptx_thread *t, const ptx_operand *o) {
  const nvhcq_ptx_launch_config *c = b->cfg;
  uint32_t lane = t->linear % 32;
  switch (o->reg) {
  case SR_TID:
    return t->tid[o->component];
  case SR_NTID:
    return c->block[o->component];
  case SR_CTAID:
    return b->ctaid[o->component];
  case SR_NCTAID:
    return c->grid[o->component];
  case SR_LANEID:
    return lane;
  case SR_WARPID:
    return t->linear / 32;
  case SR_NWARPID:
    return (b->nthreads + 31) / 32;
  case SR_SMID:
    return smid(b);
  case SR_CLOCK:
    return (uint32_t)t->clock;
  case SR_CLOCK64:
    return t->clock;
  case SR_GLOBALTIMER:
    return now_ns();
  case SR_LANEMASK_EQ:
    return 1u << lane;
  case SR_LANEMASK_LT:
    return (1u << lane) - 1;
  case SR_LANEMASK_LE:
    return (uint32_t)((2ull << lane) - 1);
  case SR_LANEMASK_GT:
    return (uint32_t) ~((2ull << lane) - 1);
  case SR_LANEMASK_GE:
    return (uint32_t) ~((1u << lane) - 1);
  case SR_DYN_SMEM:
    return c->dynamic_shared_bytes;
  case SR_TOTAL_SMEM:
    return b->shared_size;
  default:
    return cluster_special(b, o);
  }
}

static uint64_t immediate(const ptx_operand *o, uint8_t type) {
  uint64_t v = (uint64_t)o->imm;
  if (TYPE_KIND(type) == TK_F && TYPE_SIZE(type) == 8 && o->imm_kind == IMM_F32) {
    float f;
    uint32_t u = (uint32_t)v;
    memcpy(&f, &u, 4);
    double d = f;
    memcpy(&v, &d, 8);
  } else if (TYPE_KIND(type) == TK_F && TYPE_SIZE(type) == 4 && o->imm_kind == IMM_F64) {
    double d;
    memcpy(&d, &v, 8);
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    v = u;
  }
  return v;
}

static uint64_t symbol_value(const ptx_block *b, const ptx_operand *o) {
  if (o->sym_space == SP_NONE) return b->dynamic_base; /* the extern .shared array */
  return o->sym_address;
}

uint64_t ptx_read(const ptx_block *b, const ptx_thread *t, const ptx_insn *in, int i,
                  uint8_t type) {
  const ptx_operand *o = &in->ops[i];
  switch (o->kind) {
  case OPD_REG:
    return o->reg < 0 ? 0 : t->regs[o->reg];
  case OPD_IMM:
    return immediate(o, type);
  case OPD_SYM:
    return symbol_value(b, o);
  case OPD_SPECIAL:
    return special(b, t, o);
  default:
    return 0;
  }
}

static void *module_var(const nvhcq_ptx_module *m, uint8_t space, uint64_t a, size_t size) {
  for (size_t i = 0; i < m->nvars; i++) {
    const ptx_var *v = &m->vars[i];
    if (!v->data || (space != SP_NONE && v->sym.space != space)) continue;
    if (a >= v->sym.address && a - v->sym.address <= v->sym.size &&
        size <= v->sym.size - (a - v->sym.address))
      return v->data + (a - v->sym.address);
  }
  return NULL;
}

static void *global_ptr(ptx_block *b, uint64_t a, size_t size, int write) {
  void *p = module_var(b->k->module, SP_NONE, a, size);
  if (p) return p;
  const nvhcq_ptx_memory *m = b->cfg->memory;
  if (!m || !m->translate) return (void *)(uintptr_t)a;
  return m->translate(m->user, a, size, write);
}

/* .const: the module's own, or a placed variable in global memory (read only). */
static void *const_ptr(ptx_block *b, uint64_t a, size_t size, int write) {
  if (write) return NULL;
  void *p = module_var(b->k->module, SP_CONST, a, size);
  const nvhcq_ptx_memory *m = b->cfg->memory;
  if (p || !m || !m->translate) return p;
  return m->translate(m->user, a, size, 0);
}

static void *window(unsigned char *base, size_t limit, uint64_t a, size_t size) {
  if (a > limit || size > limit - a) return NULL;
  return base + a;
}

/* A shared::cluster address (exec.h): the block's own shared memory, or a cluster peer's. */
static void *shared_ptr(ptx_block *b, uint64_t a, size_t size) {
  uint64_t rank = a >> PTX_CLUSTER_SHIFT;
  if (rank) {
    if (rank > b->cluster->count) return NULL;
    b = &b->cluster->blocks[rank - 1];
    a &= (1u << PTX_CLUSTER_SHIFT) - 1;
  }
  return window(b->shared, b->shared_size, a, size);
}

void *ptx_space_ptr(ptx_block *b, ptx_thread *t, uint8_t space, uint64_t a, size_t size,
                    int write) {
  switch (space) {
  case SP_GLOBAL:
    return global_ptr(b, a, size, write);
  case SP_SHARED:
    return shared_ptr(b, a, size);
  case SP_LOCAL:
    return window(t->local, b->k->local_size, a, size);
  case SP_PARAM:
    return write ? NULL : window(b->params, b->k->params_size, a, size);
  case SP_CONST:
    return const_ptr(b, a, size, write);
  default:
    if (a >= PTX_PARAM_WINDOW)
      return ptx_space_ptr(b, t, SP_PARAM, a - PTX_PARAM_WINDOW, size, write);
    if (a >= PTX_LOCAL_WINDOW)
      return ptx_space_ptr(b, t, SP_LOCAL, a - PTX_LOCAL_WINDOW, size, write);
    if (a >= PTX_SHARED_WINDOW)
      return ptx_space_ptr(b, t, SP_SHARED, a - PTX_SHARED_WINDOW, size, write);
    return global_ptr(b, a, size, write);
  }
}

uint64_t ptx_operand_address(const ptx_block *b, const ptx_thread *t, const ptx_operand *o) {
  uint64_t a = (uint64_t)o->imm;
  if (o->reg >= 0)
    a += t->regs[o->reg];
  else if (o->sym_space != SP_NONE || o->sym_address)
    a += symbol_value(b, o);
  return a;
}

void *ptx_address(ptx_block *b, ptx_thread *t, const ptx_insn *in, const ptx_operand *o,
                  size_t size, int write) {
  uint64_t a = ptx_operand_address(b, t, o);
  uint8_t space = in->space;
  char what[96];
  if (size && a % size != 0) {
    snprintf(what, sizeof what, "misaligned %zu-byte access", size);
    ptx_fault(b, t, in, NVHCQ_PTX_FAULT_MISALIGNED, a, write, what);
    return NULL;
  }
  void *p = ptx_space_ptr(b, t, space, a, size, write);
  if (!p) {
    static const char *const names[] = {"generic", "global", "shared", "local", "param", "const"};
    snprintf(what, sizeof what, "%s %zu-byte %s outside any mapping", names[space], size,
             write ? "write" : "read");
    ptx_fault(b, t, in, NVHCQ_PTX_FAULT_ADDRESS, a, write, what);
  }
  return p;
}
