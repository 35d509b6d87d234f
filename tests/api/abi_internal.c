/* abi_internal.c: DR_ABI_FACTS (abi.h) evaluated against the internal
 * headers, for api_test.c to compare with the public header's copies. */
#include "backends/run.h"
#include "ir/diag.h"
#include "ir/graph.h"
#include "kernels/registry.h"
#include "tests/api/abi.h"

unsigned dr_test_internal_abi(uint64_t *facts, unsigned max) {
  unsigned n = 0;
#define DR_X(v) \
  if (n < max) facts[n++] = (uint64_t)(v);
  DR_ABI_FACTS(DR_X)
#undef DR_X
  return n;
}
