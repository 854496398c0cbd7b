/* Device printf, assert, malloc and free: the syscalls module (syscalls.cu) a device loads on
 * first need, its printf FIFO and heap, and the drain that prints what kernels wrote. */
#ifndef NVHCQ_SYSCALLS_H
#define NVHCQ_SYSCALLS_H

#include "core/device.h"
#include "exec/syscalls_abi.h"
#include "hw/elf.h"

/* For a cubin with imports (nvhcq_cubin_is_syscall): loads the device's syscalls module if it is
 * not yet, writes each import's GPU address into addresses, and raises each kernel that calls
 * one to the syscall's registers and adds its largest frame to the kernel's stack. */
nvhcq_status nvhcq_syscalls_resolve(nvhcq_device *dev, nvhcq_cubin *c,
                                    uint64_t addresses[NVHCQ_CUBIN_MAX_IMPORTS]) NVHCQ_MUST_CHECK;

/* Prints the records kernels have finished (printf to stdout, assert to stderr, or the print
 * callback), in order, each once; any thread, any time. */
void nvhcq_syscalls_drain(nvhcq_device *dev);
/* For the fault report: "device-side assertion failed: <CUDA's line>" of the last assertion. */
void nvhcq_syscalls_explain(nvhcq_device *dev, char *out, size_t cap);
/* After a recovery: prints what is ready, skips records the stopped kernels left unfinished and
 * forgets the assertion. */
void nvhcq_syscalls_reset(nvhcq_device *dev);
/* For tests on the mock, which runs no syscalls: the ring (*capacity bytes), the FIFO's header
 * and the module's state, where a test writes records as syscalls.cu does. NULL before the first
 * module that needs the syscalls. */
uint8_t *nvhcq_syscalls_test_fifo(nvhcq_device *dev, uint64_t *capacity, nvhcq_sys_fifo **fifo,
                                  nvhcq_sys_state **state);
/* At close: the module, the FIFO and the heap go. */
void nvhcq_syscalls_close(nvhcq_device *dev);

#endif
