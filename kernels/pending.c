/* pending.c: TEMPORARY. Launchers that answer cudaErrorNotSupported (801)
 * until the CUDA implementations land, so that the registry links today.
 * Deleted by the commit that adds the .cu files. */
#include "kernels/impl.h"

#define DR_X(n) \
  int dr__k_##n##_launch(const DrKLaunch *l) { return 801; }
DR_KERNEL_LIST(DR_X)
#undef DR_X
