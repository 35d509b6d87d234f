/* blas.h: DrKBlas, the cuBLAS context of the gemm built-ins: a handle, its
 * workspace, and the stream it is bound to. cuBLAS is not linked:
 * libcublas.so.13 is loaded with dlopen on first use, so dagrun starts on
 * machines without it and only a pipeline that uses gemm fails, with a
 * message that says why. Plain C, no CUDA types.
 *
 * Use: one DrKBlas per stream that runs gemm nodes (a handle's workspace
 * must not be shared by concurrent streams), created and bound before the
 * timed region and before any stream capture; pass it as DrKLaunch.blas to
 * kernels with DR_KFLAG_BLAS. Binding sets the stream and then the
 * workspace (cublasSetStream resets the workspace), which is what makes the
 * calls capture-safe. */
#ifndef DAGRUN_KERNELS_BLAS_H
#define DAGRUN_KERNELS_BLAS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct DrKBlas DrKBlas;

/* Workspace bytes when dr_kblas_new is given 0, and what a backend should
 * allocate for dr_kblas_new_with_workspace (cuBLAS recommends 32 MiB on
 * Hopper). */
#define DR_KBLAS_DEFAULT_WORKSPACE (32u << 20)

/* Returns 0 when libcublas.so.13 can be loaded and has every function the
 * gemm built-ins use, else -1 with the reason in `err` (256 bytes). The
 * library is loaded at most once per process; thread-safe. */
int dr_kblas_available(char *err);

/* Creates a cuBLAS handle on the current CUDA device over the caller's
 * `workspace`: `workspace_bytes` (> 0) of device memory on that device,
 * 256-byte aligned (cudaMalloc's memory is), which the caller allocates
 * (the backend, through its CUDA table, so fault injection reaches it),
 * keeps until dr_kblas_free and then frees itself. Default math (no TF32
 * for f32), host pointer mode. Returns NULL with a message in `err` (256
 * bytes) when the workspace is NULL or empty, cuBLAS is absent, or the
 * handle cannot be created; frees what it made, never the workspace.
 * Makes no CUDA call of its own; cuBLAS calls CUDA inside cublasCreate. */
DrKBlas *dr_kblas_new_with_workspace(void *workspace, uint64_t workspace_bytes, char *err);

/* Like dr_kblas_new_with_workspace, with `workspace_bytes` (0: the default)
 * that this function allocates with cudaMalloc, outside any backend's CUDA
 * table, and dr_kblas_free releases with cudaFree. Returns NULL with a
 * message in `err` (256 bytes) when cuBLAS is absent, the memory cannot be
 * had, or the handle cannot be created; frees what it made. Kept for
 * callers that have no CUDA table (tests); backends use the above. */
DrKBlas *dr_kblas_new(uint64_t workspace_bytes, char *err);

/* Destroys the handle, and the workspace when dr_kblas_new allocated it
 * (a caller's workspace stays the caller's); NULL-safe. The caller makes
 * sure no work using it is pending (synchronize its stream first). */
void dr_kblas_free(DrKBlas *blas);

/* Binds the handle to `stream` (a cudaStream_t; NULL: the legacy default
 * stream) and sets its workspace. Returns 0, or -1 with a message in `err`. */
int dr_kblas_bind(DrKBlas *blas, void *stream, char *err);

/* The stream the handle is bound to (NULL before the first bind). */
void *dr_kblas_stream(const DrKBlas *blas);

/* The message of the last failed call made through `blas` by a gemm
 * launcher (whose int return can only say cudaErrorUnknown), or "". */
const char *dr_kblas_last_error(const DrKBlas *blas);

#ifdef __cplusplus
}
#endif

#endif
