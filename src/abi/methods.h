/* Method offsets and field values of the host (GPFIFO), copy and compute classes, from NVIDIA's
 * published class headers (clc56f/clc86f, clc6b5/clc8b5, clc6c0/clcbc0). Data only. */
#ifndef NVHCQ_ABI_METHODS_H
#define NVHCQ_ABI_METHODS_H

/* Method header: SEC_OP 31:29, count 28:16, subchannel 15:13, dword address 11:0. */
#define NVHCQ_SEC_OP_INC_METHOD       1u
#define NVHCQ_SEC_OP_NON_INC_METHOD   3u
#define NVHCQ_SEC_OP_IMMD_DATA_METHOD 4u
#define NVHCQ_SEC_OP_ONE_INC          5u

/* Subchannels nvhcq binds its objects to. */
enum { NVHCQ_SUBC_HOST = 0, NVHCQ_SUBC_COMPUTE = 1, NVHCQ_SUBC_COPY = 4 };

/* Host class methods (the same offsets on c56f and c86f). */
#define NVC56F_NON_STALL_INTERRUPT 0x020
#define NVC56F_SEM_ADDR_LO         0x05c
#define NVC56F_SEM_ADDR_HI         0x060
#define NVC56F_SEM_PAYLOAD_LO      0x064
#define NVC56F_SEM_PAYLOAD_HI      0x068
#define NVC56F_SEM_EXECUTE         0x06c
#define NVC56F_WFI                 0x078
/* SEM_EXECUTE fields. */
#define NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE        0u
#define NVC56F_SEM_EXECUTE_OPERATION_RELEASE        1u
#define NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ 2u
#define NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ   3u
#define NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND        4u /* (value & payload) != 0 */
#define NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR        5u /* ~(value | payload) != 0 */
#define NVC56F_SEM_EXECUTE_ACQUIRE_SWITCH_TSG       (1u << 12)
#define NVC56F_SEM_EXECUTE_RELEASE_WFI              (1u << 20)
#define NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT       (1u << 24)
#define NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP        (1u << 25)

/* USERD (channel control area) byte offsets. */
#define NVHCQ_USERD_GP_GET 0x88
#define NVHCQ_USERD_GP_PUT 0x8c
/* Usermode doorbell: write the channel's work-submit token here. */
#define NVHCQ_USERMODE_NOTIFY_CHANNEL_PENDING 0x90

/* GPFIFO entry: address (dword aligned) in 39:2 / 63:32 upper bits, length in dwords 62:42. */
#define NVHCQ_GPFIFO_ENTRY(addr, words)                                                            \
  (((uint64_t)(addr) & ~3ull) | ((uint64_t)(words) << 42) | (1ull << 41))
/* The entry's length field is 21 bits wide. */
#define NVHCQ_GPFIFO_MAX_WORDS ((1u << 21) - 1)

/* Copy engine (c6b5 .. cab5, same offsets). */
#define NVC6B5_SET_SEMAPHORE_A             0x240
#define NVC6B5_SET_SEMAPHORE_B             0x244
#define NVC6B5_SET_SEMAPHORE_PAYLOAD       0x248
#define NVC7B5_SET_SEMAPHORE_PAYLOAD_UPPER 0x24c
#define NVC6B5_LAUNCH_DMA                  0x300
#define NVC6B5_OFFSET_IN_UPPER             0x400
#define NVC6B5_OFFSET_IN_LOWER             0x404
#define NVC6B5_OFFSET_OUT_UPPER            0x408
#define NVC6B5_OFFSET_OUT_LOWER            0x40c
#define NVC6B5_LINE_LENGTH_IN              0x418
/* LAUNCH_DMA fields. */
#define NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_PIPELINED     1u
#define NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED 2u
#define NVC6B5_LAUNCH_DMA_FLUSH_ENABLE                     (1u << 2)
#define NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD  (1u << 3)
#define NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD (2u << 3)
#define NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH          (1u << 7)
#define NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH          (1u << 8)
#define NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE_64BIT     (1u << 27)

/* Compute classes (c6c0 .. cec0, same offsets). */
#define NVC6C0_SET_OBJECT                               0x000
#define NVC6C0_WAIT_FOR_IDLE                            0x110
#define NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A        0x2a0
#define NVC6C0_SEND_PCAS_A                              0x2b4
#define NVC6C0_SEND_SIGNALING_PCAS2_B                   0x2c0
#define NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A  0x2e4
#define NVC6C0_SET_SHADER_LOCAL_MEMORY_A                0x790
#define NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A         0x7b0
#define NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI          0x1698
#define NVC6C0_INVALIDATE_INSTRUCTION                   (1u << 0)
#define NVC6C0_INVALIDATE_DATA                          (1u << 4)
#define NVC6C0_INVALIDATE_CONSTANT                      (1u << 12)
#define NVC6C0_SEND_SIGNALING_PCAS2_B_PREFETCH          8u
#define NVC6C0_SEND_SIGNALING_PCAS2_B_PREFETCH_SCHEDULE 9u
/* Texture header and sampler pools: A upper address, B lower, C the largest index. */
#define NVC6C0_INVALIDATE_TEXTURE_HEADER_CACHE_NO_WFI 0x0244
#define NVC6C0_INVALIDATE_SAMPLER_CACHE_NO_WFI        0x1424
#define NVC6C0_SET_TEX_SAMPLER_POOL_A                 0x155c
#define NVC6C0_SET_TEX_HEADER_POOL_A                  0x1574
/* Hopper (cbc0) and later only: which texture header format the engine reads. */
#define NVCBC0_SET_TEXTURE_HEADER_VERSION 0x07ac

#endif
