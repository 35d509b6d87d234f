/* blas.c: DrKBlas (see blas.h): libcublas.so.13 loaded with dlopen once per
 * process, a handle per DrKBlas over a workspace the caller gives it
 * (dr_kblas_new_with_workspace) or, through the older dr_kblas_new, one this
 * file allocates. Only the few cuBLAS entry points the gemm built-ins need
 * are looked up (blasfn.h); nothing links against cuBLAS.
 *
 * CUDA calls made here rather than through the backend's table: only
 * dr_kblas_new's cudaMalloc and the matching cudaFree in dr_kblas_free (not
 * reached from dr_kblas_new_with_workspace), and cudaGetLastError to clear
 * a failed cudaMalloc. cuBLAS itself calls the CUDA runtime and driver
 * inside cublasCreate/Destroy/SetStream/SetWorkspace and the gemm calls;
 * no table can reach those. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kernels/blas.h"
#include "kernels/blasfn.h"

#define CUBLAS_SONAME "libcublas.so.13"

DrKBlasFns dr__kblas_fns;
static char load_error[DR_KERR_SIZE];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

struct DrKBlas {
  DrCublasHandle handle;
  void *workspace;
  size_t workspace_bytes;
  int owns_workspace; /* made by dr_kblas_new: cudaFree it */
  void *stream;
  int bound;
  char last_error[DR_KERR_SIZE];
};

static void load_cublas(void) {
  void *lib = dlopen(CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(load_error, sizeof load_error,
             "cuBLAS is not available: %s (the gemm kernels need the CUDA "
             "13 cuBLAS library on the loader's path)",
             dlerror());
    return;
  }
  static const struct {
    const char *name;
    size_t offset;
  } fns[] = {
#define DR_X(field, sym) {sym, offsetof(DrKBlasFns, field)},
      DR_KBLAS_FN_LIST(DR_X)
#undef DR_X
  };
  DrKBlasFns got = {0};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    void *p = dlsym(lib, fns[i].name);
    if (p == NULL) {
      snprintf(load_error, sizeof load_error, "cuBLAS is not usable: %s has no %s", CUBLAS_SONAME,
               fns[i].name);
      dlclose(lib);
      return;
    }
    memcpy((char *)&got + fns[i].offset, &p, sizeof p);
  }
  dr__kblas_fns = got;
  dr__kblas_fns.loaded = 1;
}

int dr_kblas_available(char *err) {
  pthread_once(&load_once, load_cublas);
  if (!dr__kblas_fns.loaded) {
    snprintf(err, DR_KERR_SIZE, "%s", load_error);
    return -1;
  }
  return 0;
}

const char *dr__kblas_status(int status) {
  if (dr__kblas_fns.loaded) return dr__kblas_fns.status_string(status);
  return "cuBLAS not loaded";
}

/* The handle over `workspace` (not yet owned: the caller sets
 * owns_workspace once this succeeds). */
static DrKBlas *kblas_make(void *workspace, size_t workspace_bytes, char *err) {
  DrKBlas *b = calloc(1, sizeof *b);
  if (b == NULL) {
    snprintf(err, DR_KERR_SIZE, "out of host memory");
    return NULL;
  }
  b->workspace = workspace;
  b->workspace_bytes = workspace_bytes;
  DrCublasStatus st = dr__kblas_fns.create(&b->handle);
  if (st != DR_CUBLAS_STATUS_SUCCESS) {
    snprintf(err, DR_KERR_SIZE, "cublasCreate: %s", dr__kblas_status(st));
    b->handle = NULL;
    dr_kblas_free(b);
    return NULL;
  }
  st = dr__kblas_fns.set_math_mode(b->handle, DR_CUBLAS_DEFAULT_MATH);
  if (st != DR_CUBLAS_STATUS_SUCCESS) {
    snprintf(err, DR_KERR_SIZE, "cublasSetMathMode: %s", dr__kblas_status(st));
    dr_kblas_free(b);
    return NULL;
  }
  return b;
}

DrKBlas *dr_kblas_new_with_workspace(void *workspace, uint64_t workspace_bytes, char *err) {
  if (workspace == NULL || workspace_bytes == 0 || workspace_bytes > SIZE_MAX) {
    snprintf(err, DR_KERR_SIZE, "cuBLAS workspace: need device memory and a size, got %p and %llu bytes",
             workspace, (unsigned long long)workspace_bytes);
    return NULL;
  }
  if (dr_kblas_available(err) != 0) return NULL;
  return kblas_make(workspace, (size_t)workspace_bytes, err);
}

DrKBlas *dr_kblas_new(uint64_t workspace_bytes, char *err) {
  if (dr_kblas_available(err) != 0) return NULL;
  size_t bytes = workspace_bytes ? (size_t)workspace_bytes : DR_KBLAS_DEFAULT_WORKSPACE;
  void *workspace = NULL;
  cudaError_t ce = cudaMalloc(&workspace, bytes);
  if (ce != cudaSuccess) {
    snprintf(err, DR_KERR_SIZE, "cudaMalloc of the %zu-byte cuBLAS workspace: %s", bytes,
             cudaGetErrorString(ce));
    cudaGetLastError();
    return NULL;
  }
  DrKBlas *b = kblas_make(workspace, bytes, err);
  if (b == NULL) {
    cudaFree(workspace);
    return NULL;
  }
  b->owns_workspace = 1;
  return b;
}

void dr_kblas_free(DrKBlas *b) {
  if (b == NULL) return;
  if (b->handle != NULL) dr__kblas_fns.destroy(b->handle);
  if (b->owns_workspace && b->workspace != NULL) cudaFree(b->workspace);
  free(b);
}

int dr_kblas_bind(DrKBlas *b, void *stream, char *err) {
  DrCublasStatus st = dr__kblas_fns.set_stream(b->handle, stream);
  if (st != DR_CUBLAS_STATUS_SUCCESS) {
    snprintf(err, DR_KERR_SIZE, "cublasSetStream: %s", dr__kblas_status(st));
    return -1;
  }
  /* After SetStream, which resets the workspace to cuBLAS's own pool. */
  st = dr__kblas_fns.set_workspace(b->handle, b->workspace, b->workspace_bytes);
  if (st != DR_CUBLAS_STATUS_SUCCESS) {
    snprintf(err, DR_KERR_SIZE, "cublasSetWorkspace: %s", dr__kblas_status(st));
    return -1;
  }
  b->stream = stream;
  b->bound = 1;
  return 0;
}

void *dr_kblas_stream(const DrKBlas *b) { return b->stream; }

const char *dr_kblas_last_error(const DrKBlas *b) { return b->last_error; }

DrCublasHandle dr__kblas_handle(DrKBlas *b, void *stream) {
  if (!b->bound || b->stream != stream) {
    if (dr_kblas_bind(b, stream, b->last_error) != 0) return NULL;
  }
  return b->handle;
}

char *dr__kblas_error_buf(DrKBlas *b) { return b->last_error; }
