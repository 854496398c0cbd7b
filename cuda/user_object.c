/* User objects: reference-counted destructors that graphs and executable graphs hold references
 * to, run when the last reference goes (never with the library's lock held). */
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

static CUresult uobj_check(CUuserObject o) {
  return o && o->magic == NVCU_UOBJ_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Drops `count` references; the last one runs the destructor on the caller's thread. */
static void uobj_release(struct CUuserObject_st *o, unsigned int count) {
  if (atomic_fetch_sub(&o->refs, count) != count) return;
  CUhostFn destroy = o->destroy;
  void *ptr = o->ptr;
  o->magic = 0;
  free(o);
  destroy(ptr);
}

CUresult cuUserObjectCreate(CUuserObject *object_out, void *ptr, CUhostFn destroy,
                            unsigned int initialRefcount, unsigned int flags) {
  if (!object_out || !destroy || !initialRefcount) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) {
    nvcu_log("cuUserObjectCreate: flags 0x%x; CUDA requires CU_USER_OBJECT_NO_DESTRUCTOR_SYNC (1)",
             flags);
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult r = nvcu_current(NULL, NULL);
  if (r) return r;
  struct CUuserObject_st *o = malloc(sizeof *o);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->magic = NVCU_UOBJ_MAGIC;
  atomic_init(&o->refs, initialRefcount);
  o->ptr = ptr;
  o->destroy = destroy;
  *object_out = o;
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  if (uobj_check(object)) return CUDA_ERROR_INVALID_HANDLE;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  atomic_fetch_add(&object->refs, count);
  return CUDA_SUCCESS;
}

/* Releasing more references than the caller holds is undefined in CUDA: not checked. */
CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  if (uobj_check(object)) return CUDA_ERROR_INVALID_HANDLE;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  uobj_release(object, count);
  return CUDA_SUCCESS;
}

static nvcu_uref *urefs_find(nvcu_urefs *l, struct CUuserObject_st *obj) {
  for (uint32_t i = 0; i < l->n; i++)
    if (l->v[i].obj == obj) return &l->v[i];
  return NULL;
}

CUresult nvcu_urefs_add(nvcu_urefs *l, struct CUuserObject_st *obj, unsigned int count) {
  nvcu_uref *u = urefs_find(l, obj);
  if (u) {
    u->count += count;
    return CUDA_SUCCESS;
  }
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? 2 * l->cap : 4;
    nvcu_uref *v = realloc(l->v, cap * sizeof *v);
    if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
    l->v = v, l->cap = cap;
  }
  l->v[l->n++] = (nvcu_uref){obj, count};
  return CUDA_SUCCESS;
}

CUresult nvcu_urefs_copy(nvcu_urefs *to, const nvcu_urefs *from) {
  *to = (nvcu_urefs){0};
  if (!from->n) return CUDA_SUCCESS;
  to->v = malloc(from->n * sizeof *to->v);
  if (!to->v) return CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < from->n; i++) {
    to->v[i] = from->v[i];
    atomic_fetch_add(&from->v[i].obj->refs, from->v[i].count);
  }
  to->n = to->cap = from->n;
  return CUDA_SUCCESS;
}

void nvcu_urefs_release(nvcu_urefs *l) {
  nvcu_urefs taken = *l;
  *l = (nvcu_urefs){0};
  for (uint32_t i = 0; i < taken.n; i++) uobj_release(taken.v[i].obj, taken.v[i].count);
  free(taken.v);
}

/* Without CU_GRAPH_USER_OBJECT_MOVE the graph's references are new ones; with it they are the
 * caller's, moved. */
CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                 unsigned int flags) {
  if (nvcu_graph_check(graph) || uobj_check(object)) return CUDA_ERROR_INVALID_HANDLE;
  if (!count || (flags & ~(unsigned int)CU_GRAPH_USER_OBJECT_MOVE)) {
    nvcu_log("cuGraphRetainUserObject: count %u, flags 0x%x (count must be nonzero, flags 0 or "
             "CU_GRAPH_USER_OBJECT_MOVE)",
             count, flags);
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult r = nvcu_urefs_add(&graph->urefs, object, count);
  if (!r && !(flags & CU_GRAPH_USER_OBJECT_MOVE)) atomic_fetch_add(&object->refs, count);
  return r;
}

CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  if (nvcu_graph_check(graph) || uobj_check(object)) return CUDA_ERROR_INVALID_HANDLE;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  nvcu_uref *u = urefs_find(&graph->urefs, object);
  if (!u || u->count < count) {
    nvcu_log("cuGraphReleaseUserObject: graph %p holds %u references to user object %p, not %u",
             (void *)graph, u ? u->count : 0, (void *)object, count);
    return CUDA_ERROR_INVALID_VALUE;
  }
  u->count -= count;
  if (!u->count) *u = graph->urefs.v[--graph->urefs.n];
  uobj_release(object, count);
  return CUDA_SUCCESS;
}
