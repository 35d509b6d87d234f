/* stamp.cu: the stamp kernel of --timing=stamps: one thread that writes
 * the GPU's nanosecond clock (%globaltimer) into one slot of a device
 * array. The CUDA backend enqueues it on a node's stream right after the
 * node, so the slot receives the time the node's work completed (see
 * DR_TIMING_LIST in run.h). It is an ordinary kernel launch, so stream
 * capture turns it into a kernel node. Reached only through DrCudaApi's
 * stamp_launch entry (cuda_api.c), so fake runtimes can stand in for it.
 * The spare kernel beside it (spare_launch) does nothing at all, and the
 * word store (words_launch) writes graph mode's device-memory parameter
 * words from values passed by value. */
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void stamp_kernel(unsigned long long *slot) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *slot = t;
}

/* Does nothing: graph mode's spare slot after a library call (graph.c,
 * "spare slots"), a kernel node that a later launch of more nodes is set
 * into and that is disabled while it is not needed. */
__global__ void spare_kernel(void) {}

/* Up to DR_WORDS_PER_STORE (address, value) pairs, passed by value: the
 * launch takes a copy of its arguments when it is made, so the host's
 * array may change at once, and the words change in stream order, after
 * everything before the launch on its stream has run (the iterations in
 * flight read the old ones). */
#define DR_WORDS_PER_STORE 32
struct WordStore {
  unsigned n;
  unsigned long long *dst[DR_WORDS_PER_STORE];
  unsigned long long value[DR_WORDS_PER_STORE];
};

__global__ void words_kernel(WordStore s) {
  unsigned i = threadIdx.x;
  if (i < s.n) *s.dst[i] = s.value[i];
}

}  // namespace

/* Enqueues the stamp kernel (1 block of 1 thread) writing `slot` on
 * `stream`. Returns the launch's cudaError_t as an int. */
extern "C" int dr__stamp_launch(unsigned long long *slot, cudaStream_t stream) {
  stamp_kernel<<<1, 1, 0, stream>>>(slot);
  return (int)cudaGetLastError();
}

/* Enqueues the spare kernel (1 block of 1 thread, no work) on `stream`.
 * Returns the launch's cudaError_t as an int. */
extern "C" int dr__spare_launch(cudaStream_t stream) {
  spare_kernel<<<1, 1, 0, stream>>>();
  return (int)cudaGetLastError();
}

/* Writes *dst[i] = value[i] for i < n on `stream`, in launches of at
 * most DR_WORDS_PER_STORE pairs (one for up to 32 words), each an
 * ordinary kernel of one block. Returns the first failed launch's
 * cudaError_t as an int, or 0. */
extern "C" int dr__words_launch(unsigned long long *const *dst, const unsigned long long *value, unsigned n,
                                cudaStream_t stream) {
  for (unsigned first = 0; first < n; first += DR_WORDS_PER_STORE) {
    WordStore s;
    s.n = n - first < DR_WORDS_PER_STORE ? n - first : DR_WORDS_PER_STORE;
    for (unsigned i = 0; i < s.n; i++) {
      s.dst[i] = dst[first + i];
      s.value[i] = value[first + i];
    }
    words_kernel<<<1, DR_WORDS_PER_STORE, 0, stream>>>(s);
    cudaError_t rc = cudaGetLastError();
    if (rc != cudaSuccess) return (int)rc;
  }
  return 0;
}
