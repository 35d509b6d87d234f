/* blas_abi.cu: no code; build-time checks that the cuBLAS types and
 * constants spelled out in blasfn.h (for C, which cannot include
 * cublas_api.h here) match the real headers, and that each loaded entry
 * point has the signature blasfn.h gives it. */
#include <cublas_api.h>

#include <type_traits>

#include "kernels/blasfn.h"

static_assert(sizeof(DrCublasHandle) == sizeof(cublasHandle_t), "handle");
static_assert(sizeof(DrCublasStatus) == sizeof(cublasStatus_t), "status");
static_assert(sizeof(int) == sizeof(cublasOperation_t), "enum size");
static_assert(sizeof(int) == sizeof(cudaDataType), "enum size");
static_assert(sizeof(int) == sizeof(cublasComputeType_t), "enum size");
static_assert(sizeof(int) == sizeof(cublasGemmAlgo_t), "enum size");
static_assert(sizeof(int) == sizeof(cublasMath_t), "enum size");
static_assert(DR_CUBLAS_STATUS_SUCCESS == CUBLAS_STATUS_SUCCESS, "status");
static_assert(DR_CUBLAS_OP_N == CUBLAS_OP_N, "op");
static_assert(DR_CUBLAS_DEFAULT_MATH == CUBLAS_DEFAULT_MATH, "math");
static_assert(DR_CUDA_R_16BF == CUDA_R_16BF, "bf16");
static_assert(DR_CUBLAS_COMPUTE_32F == CUBLAS_COMPUTE_32F, "compute");
static_assert(DR_CUBLAS_GEMM_DEFAULT == CUBLAS_GEMM_DEFAULT, "algo");

/* Same arity as the real functions (the argument types differ only by
 * enum vs int and typed vs void handles, checked above). */
template <class R, class... A>
constexpr int arity(R (*)(A...)) {
  return sizeof...(A);
}
static_assert(arity(&cublasSgemm_v2) == arity(static_cast<decltype(DrKBlasFns::sgemm)>(nullptr)), "sgemm");
static_assert(arity(static_cast<cublasStatus_t (*)(
                        cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                        const void *, cudaDataType, int, const void *, cudaDataType, int, const void *,
                        void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t)>(&cublasGemmEx)) ==
                  arity(static_cast<decltype(DrKBlasFns::gemm_ex)>(nullptr)),
              "gemmEx");
