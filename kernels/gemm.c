/* gemm.c: the launchers of gemm_f32 and gemm_bf16: one cuBLAS call on the
 * node's stream through the node's DrKBlas (blas.h). dagrun's matrices are
 * row-major and cuBLAS's column-major, so C = A*B is computed as
 * C^T = B^T * A^T: the operands swap and m and n trade places, with no
 * transposition of data. f32 uses cublasSgemm under the default math mode
 * (no TF32); bf16 uses cublasGemmEx with f32 compute. A cuBLAS failure
 * returns cudaErrorUnknown and leaves its message in
 * dr_kblas_last_error. */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "kernels/blasfn.h"
#include "kernels/impl.h"

typedef struct {
  DrCublasHandle handle;
  int m, n, k;
  float alpha, beta;
} GemmCall;

/* Checks the arguments and gets the handle bound to l->stream. Returns 0,
 * or the cudaError_t to return. */
static int gemm_prepare(const DrKLaunch *l, GemmCall *g) {
  char err[DR_KERR_SIZE];
  if (dr__kcheck_gemm(l->counts, l->args, err) != 0) return (int)cudaErrorInvalidValue;
  if (l->blas == NULL) return (int)cudaErrorInvalidValue; /* the backend must supply DrKBlas */
  g->handle = dr__kblas_handle((DrKBlas *)l->blas, l->stream);
  if (g->handle == NULL) return (int)cudaErrorUnknown;
  g->m = (int)l->args[3].i;
  g->n = (int)l->args[4].i;
  g->k = (int)l->args[5].i;
  g->alpha = (float)l->args[6].f;
  g->beta = (float)l->args[7].f;
  return 0;
}

static int gemm_status(const DrKLaunch *l, const char *call, DrCublasStatus st) {
  if (st == DR_CUBLAS_STATUS_SUCCESS) return 0;
  snprintf(dr__kblas_error_buf((DrKBlas *)l->blas), DR_KERR_SIZE, "%s: %s", call, dr__kblas_status(st));
  return (int)cudaErrorUnknown;
}

int dr__k_gemm_f32_launch(const DrKLaunch *l) {
  GemmCall g;
  int rc = gemm_prepare(l, &g);
  if (rc != 0) return rc;
  DrCublasStatus st = dr__kblas_fns.sgemm(g.handle, DR_CUBLAS_OP_N, DR_CUBLAS_OP_N, g.n, g.m, g.k, &g.alpha,
                                          (const float *)l->args[1].ptr, g.n, (const float *)l->args[0].ptr,
                                          g.k, &g.beta, (float *)l->args[2].ptr, g.n);
  return gemm_status(l, "cublasSgemm", st);
}

int dr__k_gemm_bf16_launch(const DrKLaunch *l) {
  GemmCall g;
  int rc = gemm_prepare(l, &g);
  if (rc != 0) return rc;
  DrCublasStatus st =
      dr__kblas_fns.gemm_ex(g.handle, DR_CUBLAS_OP_N, DR_CUBLAS_OP_N, g.n, g.m, g.k, &g.alpha, l->args[1].ptr,
                            DR_CUDA_R_16BF, g.n, l->args[0].ptr, DR_CUDA_R_16BF, g.k, &g.beta, l->args[2].ptr,
                            DR_CUDA_R_16BF, g.n, DR_CUBLAS_COMPUTE_32F, DR_CUBLAS_GEMM_DEFAULT);
  return gemm_status(l, "cublasGemmEx", st);
}
