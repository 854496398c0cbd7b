/* Texture header (TIC) and sampler (TSC) words of Hopper's V2 headers: field positions from
 * NVIDIA's published clcb97tex.h (TEXHEAD_V2_BL, _V2_PITCH, _V2_1DRT; TEXSAMP0..7), and values
 * compared with the headers libcuda wrote on the H200 (see hw/texture.c). Data only. */
#ifndef NVHCQ_ABI_TEXTURE_H
#define NVHCQ_ABI_TEXTURE_H

/* Every header and sampler is 8 dwords. Bit ranges below are hi:lo over all 256 bits. */
#define NVHCQ_TIC_BYTES 32u
#define NVHCQ_TSC_BYTES 32u

/* HEADER_VERSION 127:124 */
#define NVHCQ_TIC_VERSION_PITCH_V2       2u
#define NVHCQ_TIC_VERSION_BLOCKLINEAR_V2 3u
#define NVHCQ_TIC_VERSION_ONE_D_RAW      5u
/* X/Y/Z/W_SOURCE 98:96, 101:99, 104:102, 107:105 */
#define NVHCQ_TIC_SOURCE_ZERO 0u
#define NVHCQ_TIC_SOURCE_R    2u
/* DATA_TYPE 111:108 */
#define NVHCQ_TIC_TYPE_UNORM 0u
#define NVHCQ_TIC_TYPE_SNORM 1u
#define NVHCQ_TIC_TYPE_FLOAT 2u
#define NVHCQ_TIC_TYPE_UINT  6u
#define NVHCQ_TIC_TYPE_SINT  7u
/* COMPONENTS 118:112 (117:112 in 1D raw headers) */
#define NVHCQ_TIC_R32_G32_B32_A32 0x01u
#define NVHCQ_TIC_R16_G16_B16_A16 0x03u
#define NVHCQ_TIC_R32_G32         0x04u
#define NVHCQ_TIC_A8B8G8R8        0x08u
#define NVHCQ_TIC_R16_G16         0x0cu
#define NVHCQ_TIC_R32             0x0fu
#define NVHCQ_TIC_G8R8            0x18u
#define NVHCQ_TIC_R16             0x1bu
#define NVHCQ_TIC_R8              0x1du
/* TEXTURE_TYPE 153:150 */
#define NVHCQ_TIC_ONE_D_ARRAY     4u
#define NVHCQ_TIC_TWO_D_ARRAY     5u
#define NVHCQ_TIC_TWO_D           1u
#define NVHCQ_TIC_THREE_D         2u
#define NVHCQ_TIC_TWO_D_NO_MIPMAP 7u
/* Block-linear and pitch headers: WIDTH_MINUS_ONE 144:128, NORMALIZED_COORDS 145,
 * S_R_G_B_CONVERSION 149, BORDER_SOURCE 156 (1: the sampler's colour), HEIGHT_MINUS_ONE 176:160,
 * DEPTH_MINUS_ONE 191:177 (block-linear). Block-linear: ADDRESS 31:9 and 56:32, GOBS_PER_BLOCK
 * HEIGHT 69:67 and DEPTH 72:70, LOD_ANISO_QUALITY2/LOD_ANISO_QUALITY/LOD_ISO_QUALITY 80/81/82.
 * Pitch: ADDRESS 31:5 and 56:32, PITCH 80:64 (bytes / 32), the quality bits at 81/82/83.
 * 1D raw: ADDRESS 63:0, WIDTH_MINUS_ONE 95:64. ANISO_FINE_SPREAD_FUNC 216:215,
 * ANISO_COARSE_SPREAD_FUNC 218:217. Mipmaps (block-linear): MAX_MIP_LEVEL 95:92,
 * RES_VIEW_MIN_MIP_LEVEL 227:224, RES_VIEW_MAX_MIP_LEVEL 231:228. */

/* TEXSAMP0: ADDRESS_U 2:0, _V 5:3, _P 8:6, S_R_G_B_CONVERSION 13. TEXSAMP1: MAG_FILTER 2:0,
 * MIN_FILTER 5:4, MIP_FILTER 7:6 (NONE 1, POINT 2, LINEAR 3), MIP_LOD_BIAS 24:12. TEXSAMP2:
 * MIN_LOD_CLAMP 11:0, MAX_LOD_CLAMP 23:12 (4.8 fixed point). TEXSAMP4..7: border colour R, G, B,
 * A as floats. */
#define NVHCQ_TSC_WRAP          0u
#define NVHCQ_TSC_MIRROR        1u
#define NVHCQ_TSC_CLAMP_TO_EDGE 2u
#define NVHCQ_TSC_BORDER        3u
#define NVHCQ_TSC_FILTER_POINT  1u
#define NVHCQ_TSC_FILTER_LINEAR 2u
#define NVHCQ_TSC_MIP_NONE      1u

#endif
