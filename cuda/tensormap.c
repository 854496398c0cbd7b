/* TMA tensor maps (cuTensorMapEncodeTiled / Im2col, cuTensorMapReplaceAddress): nvhcq encodes
 * the descriptor byte for byte as libcuda does; these calls only move the arguments into its
 * structs. */
#include <string.h>

#include "internal.h"

_Static_assert(sizeof(CUtensorMap) == sizeof(nvhcq_tensor_map), "a tensor map is 128 bytes");

static void copy_dims(uint64_t *dims, uint64_t *strides, uint32_t *element_strides, uint32_t rank,
                      const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                      const cuuint32_t *elementStrides) {
  for (uint32_t i = 0; i < rank && i < 5; i++) {
    dims[i] = globalDim[i];
    element_strides[i] = elementStrides[i];
    if (i + 1 < rank) strides[i] = globalStrides[i];
  }
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                cuuint32_t tensorRank, void *globalAddress,
                                const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion,
                                CUtensorMapFloatOOBfill oobFill) {
  if (!tensorMap || !globalDim || !boxDim || !elementStrides || tensorRank == 0 || tensorRank > 5 ||
      (tensorRank > 1 && !globalStrides))
    return CUDA_ERROR_INVALID_VALUE;
  nvhcq_tensor_tiled t = {.struct_size = sizeof t,
                          .dtype = (uint32_t)tensorDataType,
                          .rank = tensorRank,
                          .address = (uint64_t)(uintptr_t)globalAddress,
                          .interleave = (uint32_t)interleave,
                          .swizzle = (uint32_t)swizzle,
                          .l2_promotion = (uint32_t)l2Promotion,
                          .oob_fill = (uint32_t)oobFill};
  copy_dims(t.dims, t.strides, t.element_strides, tensorRank, globalDim, globalStrides,
            elementStrides);
  for (uint32_t i = 0; i < tensorRank; i++) t.box[i] = boxDim[i];
  return nvcu_status(nvhcq_tensor_map_encode_tiled((nvhcq_tensor_map *)tensorMap, &t),
                     "cuTensorMapEncodeTiled");
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                 cuuint32_t tensorRank, void *globalAddress,
                                 const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                 const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill) {
  if (!tensorMap || !globalDim || !globalStrides || !elementStrides || !pixelBoxLowerCorner ||
      !pixelBoxUpperCorner || tensorRank < 3 || tensorRank > 5)
    return CUDA_ERROR_INVALID_VALUE;
  nvhcq_tensor_im2col t = {.struct_size = sizeof t,
                           .dtype = (uint32_t)tensorDataType,
                           .rank = tensorRank,
                           .address = (uint64_t)(uintptr_t)globalAddress,
                           .channels = channelsPerPixel,
                           .pixels = pixelsPerColumn,
                           .interleave = (uint32_t)interleave,
                           .swizzle = (uint32_t)swizzle,
                           .l2_promotion = (uint32_t)l2Promotion,
                           .oob_fill = (uint32_t)oobFill};
  copy_dims(t.dims, t.strides, t.element_strides, tensorRank, globalDim, globalStrides,
            elementStrides);
  for (uint32_t i = 0; i + 2 < tensorRank; i++)
    t.lower[i] = pixelBoxLowerCorner[i], t.upper[i] = pixelBoxUpperCorner[i];
  return nvcu_status(nvhcq_tensor_map_encode_im2col((nvhcq_tensor_map *)tensorMap, &t),
                     "cuTensorMapEncodeIm2col");
}

/* The alignment is checked as encoding checks it (16 bytes, 32 for a 32-byte interleaved map). */
CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress) {
  if (!tensorMap) return CUDA_ERROR_INVALID_VALUE;
  return nvcu_status(nvhcq_tensor_map_replace_address((nvhcq_tensor_map *)tensorMap,
                                                      (uint64_t)(uintptr_t)globalAddress),
                     "cuTensorMapReplaceAddress");
}
