// Kernels that read texture objects and read and write surface objects, for test_texture: each
// thread samples at one texel's centre (or at offset coordinates) and writes what it got.
#include <cuda_fp16.h>
#include <stdint.h>

extern "C" __global__ void tex2d_f(cudaTextureObject_t t, float *out, int w, int h, float ox,
                                   float oy, float scale) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float>(t, (x + ox) * scale, (y + oy) * scale);
}

extern "C" __global__ void tex2d_f4(cudaTextureObject_t t, float4 *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float4>(t, x + 0.5f, y + 0.5f);
}

extern "C" __global__ void tex2d_u4(cudaTextureObject_t t, uint4 *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<uint4>(t, x + 0.5f, y + 0.5f);
}

extern "C" __global__ void tex2d_f2(cudaTextureObject_t t, float2 *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float2>(t, x + 0.5f, y + 0.5f);
}

extern "C" __global__ void tex3d_f4(cudaTextureObject_t t, float4 *out, int w, int h, int d) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x < w && y < h && z < d)
    out[(z * h + y) * w + x] = tex3D<float4>(t, x + 0.5f, y + 0.5f, z + 0.5f);
}

extern "C" __global__ void tex1d_f(cudaTextureObject_t t, float *out, int n) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x < n) out[x] = tex1D<float>(t, x + 0.5f);
}

extern "C" __global__ void tex1d_fetch(cudaTextureObject_t t, float *out, int n) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x < n) out[x] = tex1Dfetch<float>(t, x);
}

extern "C" __global__ void tex2d_layered(cudaTextureObject_t t, float *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, l = blockIdx.z;
  if (x < w && y < h) out[(l * h + y) * w + x] = tex2DLayered<float>(t, x + 0.5f, y + 0.5f, l);
}

extern "C" __global__ void surf2d_fill(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) surf2Dwrite((unsigned)((y << 16) | x) ^ 0x5a5a5a5au, s, x * 4, y);
}

extern "C" __global__ void surf2d_read(cudaSurfaceObject_t s, unsigned *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = surf2Dread<unsigned>(s, x * 4, y);
}

// Mipmapped images: every texel centre of level `lod`'s w x h (x d) texels, at that level of
// detail.
extern "C" __global__ void tex2d_lod(cudaTextureObject_t t, float *out, int w, int h, float lod) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2DLod<float>(t, (x + 0.5f) / w, (y + 0.5f) / h, lod);
}

extern "C" __global__ void tex3d_lod(cudaTextureObject_t t, float *out, int w, int h, int d,
                                     float lod) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x < w && y < h && z < d)
    out[(z * h + y) * w + x] =
        tex3DLod<float>(t, (x + 0.5f) / w, (y + 0.5f) / h, (z + 0.5f) / d, lod);
}
