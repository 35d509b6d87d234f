/* hostfn.h: the plain C ABI of host functions with declared arguments: a
 * C function that a host node calls, from a shared library named in YAML
 * (`op: host`, `fn: {lib: ./libcb.so, symbol: on_done, params: [...]}`,
 * docs/format.md) or added by a program (dr_pipeline_add_host_fn). Its
 * parameters are declared like a kernel's (`name`, `type`, `access`), and
 * the access modes of its buffer parameters give the node its reads and
 * writes, so hazards order it against every other node exactly as they
 * order a kernel. No GLib, no CUDA types: a library that exports such a
 * function needs this header (and types.h) only.
 *
 * Calling convention:
 *  - The function runs on a host worker thread (host backend) or on CUDA's
 *    callback thread (CUDA backend: a cudaLaunchHostFunc in streams mode,
 *    a host node of the captured graph in graph mode). It MUST NOT call
 *    CUDA (the runtime forbids it there and may deadlock), and should be
 *    short: on the CUDA backend it holds up the work behind it.
 *  - args[i] is declared parameter i, in declaration order. Buffers are
 *    host buffers (`where: host`); ptr points at the slice's first
 *    element, valid for the call only. The function may read a `read`
 *    slice, write a `write` slice and do both with a `readwrite` one, and
 *    must touch nothing else of dagrun's: an undeclared access is a race
 *    the plan does not order.
 *  - A node never runs concurrently with itself, so per-node state in
 *    user_data needs no lock; different nodes may run at the same time.
 *  - Return 0 on success. Nonzero fails the run (exit 70) with the message
 *    written to err (at most DR_HOST_FN_ERR_SIZE bytes, NUL included;
 *    "returned N" when left empty), and the function is not called again.
 *    The host backend stops at once; the CUDA backend cannot stop a stream
 *    from its callback thread, so the work queued behind the call still
 *    runs and the run fails when that iteration has finished.
 *
 * Versioning: abi_version is DR_HOST_FN_ABI_VERSION of the dagrun that
 * calls. A later version only appends fields to DrHostFnArgs and
 * DrHostFnArg (and raises the number); a function that reads a field added
 * in version N checks abi_version >= N first. */
#ifndef DAGRUN_HOSTFN_H
#define DAGRUN_HOSTFN_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DR_HOST_FN_ABI_VERSION 1

/* Size of the `err` buffer, including the NUL. */
#define DR_HOST_FN_ERR_SIZE 256

/* One argument, by its declared parameter. */
typedef struct {
  const char *name;    /* the parameter's name */
  DrElemType type;     /* the element type (pointers) or the scalar's type */
  int is_pointer;      /* 1: a buffer slice */
  DrAccessMode access; /* pointers: what the function may do with the slice */
  void *ptr;           /* pointers: host memory of the slice's first element */
  uint64_t count;      /* pointers: elements in the slice */
  uint64_t bytes;      /* pointers: count times the element size */
  const char *buffer;  /* pointers: the buffer's name */
  int64_t i;           /* i32 and i64 scalars */
  double f;            /* f32 and f64 scalars */
} DrHostFnArg;

typedef struct {
  uint32_t abi_version; /* DR_HOST_FN_ABI_VERSION */
  uint32_t n_args;
  const DrHostFnArg *args; /* n_args, declaration order */
  const char *node;        /* the node's id */
  /* How many times this node ran before this call in this backend
   * session (warmups first, from 0; --verify's reference run is a session
   * of its own and counts from 0 again; a DrRunner's session counts on
   * across dr_runner_run calls). */
  uint64_t iteration;
  void *user_data; /* dr_pipeline_add_host_fn's; NULL for a YAML node */
  char *err;       /* DR_HOST_FN_ERR_SIZE bytes for a message on failure */
} DrHostFnArgs;

/* The function's type: what `symbol:` must name in the library. */
typedef int (*DrHostFnFunc)(const DrHostFnArgs *args);

/* Host twins of user kernels (`host_twin: {lib, fn}` on a `kernels:`
 * entry) are not this ABI: they are kernel.h's DrKernelDef.host,
 * int fn(const DrKLaunch *l, char *err), exactly like the built-ins'. */

#ifdef __cplusplus
}
#endif

#endif
