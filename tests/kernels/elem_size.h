/* elem_size.h: the one helper the kernel library's two tests share (the
 * library itself has no GLib-free element size; ir/names.h's is the IR's):
 * the bytes of one element of a DrElemType, from DR_ELEM_TYPE_LIST. */
#ifndef DAGRUN_TESTS_KERNELS_ELEM_SIZE_H
#define DAGRUN_TESTS_KERNELS_ELEM_SIZE_H

#include <glib.h>
#include <stddef.h>

#include "include/dagrun/types.h"

static inline size_t elem_size(DrElemType t) {
  switch (t) {
#define DR_X(e, s, n) \
  case DR_ELEM_##e:   \
    return n;
    DR_ELEM_TYPE_LIST(DR_X)
#undef DR_X
    default:
      g_assert_not_reached();
  }
}

#endif
