/* The PTX interpreter's queries: kernels, their parameter layouts, module variables. */
#include "ptx_internal.h"

#include <stdlib.h>
#include <string.h>

nvhcq_ptx_status nvhcq_ptx_kernel_find(const nvhcq_ptx_module *m, const char *name,
                                       const nvhcq_ptx_kernel **out) {
  if (!m || !name || !out) return NVHCQ_PTX_INVALID;
  *out = NULL;
  for (size_t i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i].name, name) == 0) {
      *out = &m->kernels[i];
      return NVHCQ_PTX_OK;
    }
  return NVHCQ_PTX_NOT_FOUND;
}

const char *nvhcq_ptx_kernel_unsupported(const nvhcq_ptx_kernel *k) {
  return k && k->unsupported[0] ? k->unsupported : NULL;
}

size_t nvhcq_ptx_kernel_param_count(const nvhcq_ptx_kernel *k) {
  return k ? k->nparams : 0;
}

nvhcq_ptx_status nvhcq_ptx_kernel_param(const nvhcq_ptx_kernel *k, size_t index,
                                        nvhcq_ptx_param *out) {
  if (!k || !out || index >= k->nparams) return NVHCQ_PTX_INVALID;
  *out = k->params[index];
  return NVHCQ_PTX_OK;
}

size_t nvhcq_ptx_kernel_params_size(const nvhcq_ptx_kernel *k) {
  return k ? k->params_size : 0;
}

size_t nvhcq_ptx_kernel_static_shared(const nvhcq_ptx_kernel *k) {
  return k ? k->shared_static : 0;
}

nvhcq_ptx_status nvhcq_ptx_variable_find(const nvhcq_ptx_module *m, const char *name,
                                         void **address, size_t *size) {
  if (!m || !name) return NVHCQ_PTX_INVALID;
  for (size_t i = 0; i < m->nvars; i++) {
    const ptx_var *v = &m->vars[i];
    if (!v->data || strcmp(v->sym.name, name) != 0) continue;
    if (address) *address = v->data;
    if (size) *size = v->sym.size;
    return NVHCQ_PTX_OK;
  }
  return NVHCQ_PTX_NOT_FOUND;
}

/* Every operand that names the variable at `from` names `to` instead. */
static void rebase_operands(nvhcq_ptx_module *m, uint8_t space, uint64_t from, uint64_t to) {
  for (size_t k = 0; k < m->nkernels; k++)
    for (size_t i = 0; i < m->kernels[k].ninsns; i++)
      for (int j = 0; j < 5; j++) {
        ptx_operand *o = &m->kernels[k].insns[i].ops[j];
        if ((o->kind == OPD_SYM || o->kind == OPD_MEM) && o->sym_space == space &&
            o->sym_address == from)
          o->sym_address = to;
      }
}

nvhcq_ptx_status nvhcq_ptx_variable_place(nvhcq_ptx_module *m, const char *name, uint64_t address) {
  if (!m || !name) return NVHCQ_PTX_INVALID;
  for (size_t i = 0; i < m->nvars; i++) {
    ptx_var *v = &m->vars[i];
    if (!v->data || strcmp(v->sym.name, name) != 0) continue;
    rebase_operands(m, v->sym.space, v->sym.address, address);
    v->sym.address = address;
    free(v->data);
    v->data = NULL;
    return NVHCQ_PTX_OK;
  }
  return NVHCQ_PTX_NOT_FOUND;
}
