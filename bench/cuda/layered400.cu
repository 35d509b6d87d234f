/* layered400.cu: a random layered DAG of width 400 (10 levels of 400
 * scale_f32 nodes over 256-element slots), the hand-written baseline for
 * bench/pipelines/layered400.yaml. The DAG is the one
 *   bench/gen_pipeline.py --nodes 4000 --width 400 --shape random
 *                         --slice 256 --seed 42
 * writes: node j of level k reads slot p (splitmix64 % 400) of the previous
 * level's buffer (t for level 0, then a/b alternating) and writes slot j of
 * its own. Its edges are derived here as dagrun's hazard pass derives them
 * (RAW from the slot's last writer, WAR from its readers since, WAW from its
 * last writer when no reader came between): 7956 edges, the count
 * `dagrun --plan` reports for layered400.yaml. See run_dag_variants in common.h for the four variants;
 * each is checked against a serial host run (alpha = 1, so every value is a
 * copy of one of t's). */
#include <map>

#include "common.h"

static const int W = 400, LEVELS = 10;
static const long long S = 256;

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  size_t count = (size_t)W * S;
  float *buf[3]; /* t, a, b */
  for (auto &p : buf) CHECK(cudaMalloc(&p, count * sizeof(float)));
  std::vector<float> host[3];
  for (auto &h : host) h.assign(count, 0.0f);
  uint64_t fill = 7;
  for (size_t i = 0; i < count; i++) host[0][i] = (float)(splitmix64(&fill) >> 40) / (float)(1 << 24);
  CHECK(cudaMemcpy(buf[0], host[0].data(), count * sizeof(float), cudaMemcpyHostToDevice));

  Dag d;
  uint64_t rng = 42;
  struct SlotState {
    int writer = -1;
    std::vector<int> readers;
  };
  std::map<std::pair<int, int>, SlotState> slots;
  for (int k = 0; k < LEVELS; k++) {
    int src = k == 0 ? 0 : (k % 2 == 1 ? 1 : 2);
    int dst = k % 2 == 0 ? 1 : 2;
    for (int j = 0; j < W; j++) {
      int p = (int)(splitmix64(&rng) % W);
      int v = d.add_scale(buf[src] + p * S, 1.0f, buf[dst] + j * S, S);
      SlotState &in = slots[{src, p}];
      if (in.writer >= 0) d.edge(in.writer, v); /* RAW */
      SlotState &out = slots[{dst, j}];
      for (int r : out.readers) d.edge(r, v); /* WAR */
      if (out.writer >= 0 && out.readers.empty())
        d.edge(out.writer, v); /* WAW, unless a reader in between implies it */
      in.readers.push_back(v);
      out.writer = v;
      out.readers.clear();
      /* The serial host run, in program order. */
      for (long long e = 0; e < S; e++) host[dst][j * S + e] = host[src][p * S + e];
    }
  }
  std::vector<float> got(count);
  auto reset = [&]() {
    CHECK(cudaMemset(buf[1], 0xff, count * sizeof(float)));
    CHECK(cudaMemset(buf[2], 0xff, count * sizeof(float)));
  };
  auto check = [&]() {
    CHECK(cudaDeviceSynchronize());
    for (int b = 1; b < 3; b++) {
      CHECK(cudaMemcpy(got.data(), buf[b], count * sizeof(float), cudaMemcpyDeviceToHost));
      if (memcmp(got.data(), host[b].data(), count * sizeof(float)) != 0) {
        fprintf(stderr, "layered400: buffer %d differs from the serial run\n", b);
        return false;
      }
    }
    return true;
  };
  char extra[96];
  snprintf(extra, sizeof extra, ", \"width\": %d, \"levels\": %d", W, LEVELS);
  bool ok = run_dag_variants("layered400", d, o, extra, reset, check);
  for (auto p : buf) CHECK(cudaFree(p));
  return ok ? 0 : 1;
}
