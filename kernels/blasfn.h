/* blasfn.h: internal to the kernel library: the cuBLAS entry points that
 * blas.c loads with dlsym and gemm.c calls, as one X-macro list, with the
 * few cuBLAS types and constants they need. These are spelled out here
 * because cublas_api.h cannot be included from C in this toolchain (it pulls
 * in cuda_fp16.h, which needs libcu++'s <nv/target>); blas_abi.cu checks
 * every value against the real headers at build time. */
#ifndef DAGRUN_KERNELS_BLASFN_H
#define DAGRUN_KERNELS_BLASFN_H

#include <stddef.h>

#include "kernels/blas.h"
#include "kernels/registry.h"

typedef void *DrCublasHandle; /* cublasHandle_t */
typedef int DrCublasStatus;   /* cublasStatus_t */

#define DR_CUBLAS_STATUS_SUCCESS 0
#define DR_CUBLAS_OP_N 0
#define DR_CUBLAS_DEFAULT_MATH 0
#define DR_CUDA_R_16BF 14
#define DR_CUBLAS_COMPUTE_32F 68
#define DR_CUBLAS_GEMM_DEFAULT (-1)

/* X(field, symbol) */
#define DR_KBLAS_FN_LIST(X)                 \
  X(create, "cublasCreate_v2")              \
  X(destroy, "cublasDestroy_v2")            \
  X(set_stream, "cublasSetStream_v2")       \
  X(set_workspace, "cublasSetWorkspace_v2") \
  X(set_math_mode, "cublasSetMathMode")     \
  X(sgemm, "cublasSgemm_v2")                \
  X(gemm_ex, "cublasGemmEx")                \
  X(status_string, "cublasGetStatusString")

/* The C enums of cuBLAS are int-sized; pointers to them are passed as
 * void* here. */
typedef struct {
  DrCublasStatus (*create)(DrCublasHandle *);
  DrCublasStatus (*destroy)(DrCublasHandle);
  DrCublasStatus (*set_stream)(DrCublasHandle, void *);
  DrCublasStatus (*set_workspace)(DrCublasHandle, void *, size_t);
  DrCublasStatus (*set_math_mode)(DrCublasHandle, int);
  DrCublasStatus (*sgemm)(DrCublasHandle, int, int, int, int, int, const float *, const float *, int,
                          const float *, int, const float *, float *, int);
  DrCublasStatus (*gemm_ex)(DrCublasHandle, int, int, int, int, int, const void *, const void *, int, int,
                            const void *, int, int, const void *, void *, int, int, int, int);
  const char *(*status_string)(DrCublasStatus);
  int loaded;
} DrKBlasFns;

/* Filled by dr_kblas_available (blas.c); `loaded` says whether it worked. */
extern DrKBlasFns dr__kblas_fns;

/* cublasGetStatusString, or a fixed text when cuBLAS is not loaded. */
const char *dr__kblas_status(int status);

/* The handle of `blas` bound to `stream` (rebinding if it was bound to
 * another), or NULL with the reason in dr__kblas_error_buf(blas). */
DrCublasHandle dr__kblas_handle(DrKBlas *blas, void *stream);

/* The buffer behind dr_kblas_last_error (DR_KERR_SIZE bytes). */
char *dr__kblas_error_buf(DrKBlas *blas);

#endif
