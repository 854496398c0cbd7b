/* Our declarations of CUDA's structs have the layouts layouts.h states (built with the library). */
#include <stddef.h>

#include "cuda_api.h"
#include "layouts.h"

NVCU_SIZES(NVCU_SIZE_CHECK_)
NVCU_OFFSETS(NVCU_OFFSET_CHECK_)
