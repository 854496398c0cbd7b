/* Launch attributes of kernel nodes (CUDA's CUkernelNodeAttrID, the same ids as
 * cuLaunchKernelEx's): kept on the node's operation, which instantiation records as
 * cuLaunchKernelEx would launch it. */
#include <string.h>

#include "internal.h"

/* Ids CUDA takes for kernel nodes that nvhcq does not carry out: refused as unsupported. */
static int node_attr_unsupported(int id) {
  return id == 11 || id == 13 || id == 14 || id == 16; /* preferred cluster, device-updatable,
                                                          carveout, NVLink-centric scheduling */
}

CUresult nvcu_launch_attr_set(nvcu_op *op, CUlaunchAttributeID id, const CUlaunchAttributeValue *v,
                              const char *who) {
  switch (id) {
  case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: /* an L2 hint: kept, not applied */
    op->access_policy = v->accessPolicyWindow;
    return CUDA_SUCCESS;
  case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
    op->launch_flags = v->cooperative ? NVHCQ_LAUNCH_COOPERATIVE : 0;
    return CUDA_SUCCESS;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    op->cluster = (nvhcq_dim3){v->clusterDim.x, v->clusterDim.y, v->clusterDim.z};
    return CUDA_SUCCESS;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    if ((unsigned)v->clusterSchedulingPolicyPreference > NVHCQ_CLUSTER_POLICY_LOAD_BALANCING) {
      if (who)
        nvcu_log("%s: cluster scheduling policy %d is not CU_CLUSTER_SCHEDULING_POLICY_* (0-2)",
                 who, v->clusterSchedulingPolicyPreference);
      return CUDA_ERROR_INVALID_VALUE;
    }
    op->cluster_policy = (uint32_t)v->clusterSchedulingPolicyPreference;
    return CUDA_SUCCESS;
  case CU_LAUNCH_ATTRIBUTE_PRIORITY: /* nvhcq has one compute channel: kept, not applied */
    op->priority = v->priority;
    return CUDA_SUCCESS;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    op->domain_map = v->memSyncDomainMap;
    return CUDA_SUCCESS;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    op->domain = v->memSyncDomain;
    return CUDA_SUCCESS;
  default:
    if (who && node_attr_unsupported((int)id)) {
      nvcu_log("%s: launch attribute %d", who, (int)id);
      return nvcu_unsupported("this kernel node attribute");
    }
    if (who)
      nvcu_log("%s: launch attribute %d is not one CUDA takes for kernel nodes", who, (int)id);
    return CUDA_ERROR_INVALID_VALUE;
  }
}

void nvcu_launch_attrs_copy(nvcu_op *to, const nvcu_op *from) {
  to->cluster = from->cluster;
  to->cluster_policy = from->cluster_policy;
  to->launch_flags = from->launch_flags;
  to->priority = from->priority;
  to->domain = from->domain;
  to->domain_map = from->domain_map;
  to->access_policy = from->access_policy;
}

static CUresult kernel_node(CUgraphNode n) {
  if (nvcu_node_check(n)) return CUDA_ERROR_INVALID_HANDLE;
  return n->op.kind == CU_GRAPH_NODE_TYPE_KERNEL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                       CUkernelNodeAttrValue *value_out) {
  CUresult r = kernel_node(hNode);
  if (r) return r;
  if (!value_out) return CUDA_ERROR_INVALID_VALUE;
  const nvcu_op *op = &hNode->op;
  CUkernelNodeAttrValue v;
  memset(&v, 0, sizeof v);
  switch (attr) {
  case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    v.accessPolicyWindow = op->access_policy;
    break;
  case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
    v.cooperative = (op->launch_flags & NVHCQ_LAUNCH_COOPERATIVE) != 0;
    break;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    v.clusterDim.x = op->cluster.x, v.clusterDim.y = op->cluster.y, v.clusterDim.z = op->cluster.z;
    break;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    v.clusterSchedulingPolicyPreference = (int)op->cluster_policy;
    break;
  case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    v.priority = op->priority;
    break;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    v.memSyncDomainMap = op->domain_map;
    break;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    v.memSyncDomain = op->domain;
    break;
  default:
    nvcu_log("cuGraphKernelNodeGetAttribute: attribute %d", (int)attr);
    return node_attr_unsupported((int)attr) ? nvcu_unsupported("this kernel node attribute")
                                            : CUDA_ERROR_INVALID_VALUE;
  }
  *value_out = v;
  return CUDA_SUCCESS;
}

/* A graph's node changes; executable graphs made from it keep what they were instantiated with. */
CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                       const CUkernelNodeAttrValue *value) {
  CUresult r = kernel_node(hNode);
  if (r) return r;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  r = nvcu_launch_attr_set(&hNode->op, attr, value, "cuGraphKernelNodeSetAttribute");
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  CUresult r = kernel_node(dst);
  if (!r) r = kernel_node(src);
  if (r) return r;
  NVCU_LOCK();
  nvcu_launch_attrs_copy(&dst->op, &src->op);
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}
