/* copies.cu: uploads of pinned host memory to the device on one stream, the
 * hand-written baseline for bench/pipelines/copies64.yaml (64 copies of
 * 1 MiB, the shape of issue #18.2's probe) and copies512.yaml (512 copies
 * of 4 KiB, where issuing is what costs). Variants per case:
 *   loop   one cudaMemcpyAsync per copy, in order        compare: streams
 *   batch  cudaMemcpyBatchAsync, 64 copies a call (as dagrun's batches:
 *          backends/cuda/batch.h), source read in stream order
 * Each line also has host_us: the median host time of issuing one
 * iteration (the probe on the H200, 2026-12-01: 91 us for 64 x 1 MiB as a
 * loop, 33 us as one batch). Each variant's result is checked once (the
 * device bytes copied back) before the timed runs. */
#include "common.h"

static const size_t MAX_BATCH = 64; /* DR_CUDA_BATCH_MAX */

struct Case {
  const char *name;
  size_t copies, bytes; /* per copy */
};

static void issue_loop(char *d, const char *h, const Case &c, cudaStream_t st) {
  for (size_t i = 0; i < c.copies; i++)
    CHECK(cudaMemcpyAsync(d + i * c.bytes, h + i * c.bytes, c.bytes, cudaMemcpyHostToDevice, st));
}

static void issue_batch(char *d, const char *h, const Case &c, cudaStream_t st, std::vector<void *> &dsts,
                        std::vector<const void *> &srcs, std::vector<size_t> &sizes) {
  cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t attr_at = 0;
  for (size_t i = 0; i < c.copies; i++) {
    dsts[i] = d + i * c.bytes;
    srcs[i] = h + i * c.bytes;
    sizes[i] = c.bytes;
  }
  for (size_t at = 0; at < c.copies; at += MAX_BATCH) {
    size_t n = std::min(MAX_BATCH, c.copies - at);
    CHECK(cudaMemcpyBatchAsync(dsts.data() + at, srcs.data() + at, sizes.data() + at, n, &attr, &attr_at, 1,
                               st));
  }
}

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  const Case cases[] = {{"copies64", 64, 1 << 20}, {"copies512", 512, 4 << 10}};
  int failures = 0;
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (const Case &c : cases) {
    size_t total = c.copies * c.bytes;
    char *h, *back, *d;
    CHECK(cudaMallocHost(&h, total));
    CHECK(cudaMallocHost(&back, total));
    CHECK(cudaMalloc(&d, total));
    uint64_t seed = 1;
    for (size_t i = 0; i < total; i++) h[i] = (char)(splitmix64(&seed) >> 56);
    std::vector<void *> dsts(c.copies);
    std::vector<const void *> srcs(c.copies);
    std::vector<size_t> sizes(c.copies);
    for (int batch = 0; batch < 2; batch++) {
      auto body = [&](cudaStream_t s) {
        if (batch)
          issue_batch(d, h, c, s, dsts, srcs, sizes);
        else
          issue_loop(d, h, c, s);
      };
      CHECK(cudaMemset(d, 0, total));
      CHECK(cudaDeviceSynchronize());
      body(st);
      CHECK(cudaMemcpyAsync(back, d, total, cudaMemcpyDeviceToHost, st));
      CHECK(cudaStreamSynchronize(st));
      bool ok = memcmp(back, h, total) == 0;
      if (!ok)
        fprintf(stderr, "%s %s: the device bytes differ from the host's\n", c.name, batch ? "batch" : "loop");
      failures += !ok;
      double host_us = 0;
      Stats s = stats_of(time_events(st, o.warmup, o.iterations, body, &host_us));
      print_result(c.name, batch ? "batch" : "loop", batch ? nullptr : "streams", c.copies, 1, o.iterations,
                   s,
                   std::string(", \"verified\": ") + (ok ? "true" : "false") +
                       fmt(", \"host_us\": %.1f", host_us) + fmt(", \"gbps\": %.1f", total / s.median / 1e3));
    }
    CHECK(cudaFreeHost(h));
    CHECK(cudaFreeHost(back));
    CHECK(cudaFree(d));
  }
  CHECK(cudaStreamDestroy(st));
  return failures ? 1 : 0;
}
