/* abi.h: the layout facts that a program compiled against the public
 * headers (include/dagrun/dagrun.h, types.h, kernel.h) must share with the
 * library built from its internal headers. Since the internals include the
 * public types.h and kernel.h there is no copy to drift; the test keeps
 * guarding that no internal header grows one. Each translation unit
 * evaluates the same list with the definitions it sees: abi_internal.c
 * with the internal headers, api_test.c with the public one, and the test
 * compares the two. */
#ifndef DAGRUN_TESTS_API_ABI_H
#define DAGRUN_TESTS_API_ABI_H

#include <stddef.h>
#include <stdint.h>

// clang-format off
#define DR_ABI_FACTS(X) \
  X(sizeof(DrKParam)) \
  X(offsetof(DrKParam, type)) \
  X(offsetof(DrKParam, is_pointer)) \
  X(offsetof(DrKParam, access)) \
  X(offsetof(DrKParam, optional)) \
  X(offsetof(DrKParam, def)) \
  X(offsetof(DrKParam, doc)) \
  X(sizeof(DrKValue)) \
  X(sizeof(DrKLaunch)) \
  X(offsetof(DrKLaunch, counts)) \
  X(offsetof(DrKLaunch, grid)) \
  X(offsetof(DrKLaunch, block)) \
  X(offsetof(DrKLaunch, shared)) \
  X(offsetof(DrKLaunch, stream)) \
  X(offsetof(DrKLaunch, blas)) \
  X(offsetof(DrKLaunch, scratch)) \
  X(offsetof(DrKLaunch, stamp)) \
  X(offsetof(DrKLaunch, pdl)) \
  X(offsetof(DrKLaunch, guard)) \
  X(offsetof(DrKLaunch, guard_runs)) \
  X(offsetof(DrKLaunch, counts_dev)) \
  X(sizeof(DrKernelDef)) \
  X(offsetof(DrKernelDef, summary)) \
  X(offsetof(DrKernelDef, params)) \
  X(offsetof(DrKernelDef, n_params)) \
  X(offsetof(DrKernelDef, grid_over)) \
  X(offsetof(DrKernelDef, block)) \
  X(offsetof(DrKernelDef, launch)) \
  X(offsetof(DrKernelDef, host)) \
  X(offsetof(DrKernelDef, check)) \
  X(offsetof(DrKernelDef, flags)) \
  X(offsetof(DrKernelDef, scratch_bytes)) \
  X(DR_KERR_SIZE) \
  X(DR_KFLAG_BLAS) \
  X(DR_KFLAG_STAMPS) \
  X(DR_KFLAG_GUARD) \
  X(DR_KFLAG_DEVICE_COUNTS) \
  X(DR_PRIORITY_LOW) \
  X(DR_PRIORITY_NORMAL) \
  X(DR_PRIORITY_HIGH) \
  X(DR_WHERE_DEVICE) \
  X(DR_WHERE_HOST) \
  X(DR_MODE_STREAMS) \
  X(DR_MODE_GRAPH) \
  X(DR_BACKEND_AUTO) \
  X(DR_BACKEND_CUDA) \
  X(DR_BACKEND_HOST) \
  X(DR_VERIFIED_NOT_RUN) \
  X(DR_VERIFIED_PASS) \
  X(DR_VERIFIED_FAIL) \
  X(DR_ERROR_USAGE) \
  X(DR_ERROR_INVALID) \
  X(DR_ERROR_IO) \
  X(DR_ERROR_UNAVAILABLE) \
  X(DR_ERROR_RUNTIME) \
  X(DR_ERROR_VERIFY) \
  X(DR_ERROR_INTERRUPTED) \
  X(DR_ERROR_OUTPUT) \
  X(DR_TIMING_OFF) \
  X(DR_TIMING_STAMPS) \
  X(DR_TIMING_EVENTS) \
  X(DR_TIMING_AUTO)
// clang-format on

/* Fills facts[] with DR_ABI_FACTS as the internal headers define them;
 * returns how many. */
unsigned dr_test_internal_abi(uint64_t *facts, unsigned max);

#endif
