/* Built only where the CUDA toolkit's cuda.h is on the build machine: every function this library
 * implements has cuda.h's type, every enumerated value ours declares is cuda.h's, and the structs
 * have the layouts layouts.h states (check_ours.c holds our declarations to the same). */
#include <cuda.h>
#include <stddef.h>

#include "enums.h"
#include "functions.h"
#include "layouts.h"

#define NVCU_FUNCTION_CHECK_(ret, name, params)                                                    \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), #name);
NVCU_FUNCTIONS(NVCU_FUNCTION_CHECK_)

#define NVCU_VALUE_CHECK_(name, value) _Static_assert((long long)(name) == (value), #name);
CU_RESULT_LIST(NVCU_VALUE_CHECK_)
CU_DEVICE_ATTRIBUTE_LIST(NVCU_VALUE_CHECK_)
CU_POINTER_ATTRIBUTE_LIST(NVCU_VALUE_CHECK_)
CU_FUNCTION_ATTRIBUTE_LIST(NVCU_VALUE_CHECK_)
CU_JIT_OPTION_LIST(NVCU_VALUE_CHECK_)
CU_JIT_INPUT_TYPE_LIST(NVCU_VALUE_CHECK_)
CU_MISC_VALUE_LIST(NVCU_VALUE_CHECK_)
_Static_assert(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_ACCESS_SUPPORTED == 4, "the older P2P name");
_Static_assert(CU_MODULE_EAGER_LOADING == 1 && CU_FUNCTION_LOADING_STATE_LOADED == 1,
               "loading modes");
_Static_assert(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION == 4, "cluster dimension attribute");
_Static_assert(CU_LAUNCH_ATTRIBUTE_COOPERATIVE == 2, "cooperative attribute");
_Static_assert(CU_LAUNCH_ATTRIBUTE_PRIORITY == 8 && CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN == 10 &&
                   CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW == 1,
               "kernel node attributes");
_Static_assert(CU_USER_OBJECT_NO_DESTRUCTOR_SYNC == 1 && CU_GRAPH_USER_OBJECT_MOVE == 1,
               "user object flags");
_Static_assert(CU_STREAM_ADD_CAPTURE_DEPENDENCIES == 0 && CU_STREAM_SET_CAPTURE_DEPENDENCIES == 1,
               "capture dependency update flags");
_Static_assert(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP == 12 && CU_GRAPH_NODE_TYPE_CONDITIONAL == 13 &&
                   CU_GRAPH_COND_TYPE_IF == 0 && CU_GRAPH_COND_TYPE_WHILE == 1 &&
                   CU_GRAPH_COND_TYPE_SWITCH == 2 && CU_GRAPH_COND_ASSIGN_DEFAULT == 1,
               "conditional nodes");
_Static_assert(CU_GREEN_CTX_DEFAULT_STREAM == 1 && CU_DEV_RESOURCE_TYPE_SM == 1 &&
                   CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING == 1 &&
                   CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE == 2,
               "green contexts");
_Static_assert(CU_MEMORYTYPE_HOST == 1 && CU_MEMORYTYPE_DEVICE == 2, "memory types");
_Static_assert(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT == 2, "proc address status");
_Static_assert(CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT == 1 &&
                   CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT == 2 && CU_LAUNCH_PARAM_END_AS_INT == 0,
               "launch parameter markers");

NVCU_SIZES(NVCU_SIZE_CHECK_)
NVCU_OFFSETS(NVCU_OFFSET_CHECK_)
