/* What a stub of an unimplemented function calls: it logs the name and answers
 * CUDA_ERROR_NOT_SUPPORTED (as an int: the stubs do not see the CUDA types). */
#ifndef NVCU_STUBS_H
#define NVCU_STUBS_H

int nvcu_stub(const char *name);

#endif
