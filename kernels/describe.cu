/* describe.cu: dr__k_describe (registry.h): a built-in's launch described
 * rather than made, for setting a graph's kernel node in place without a
 * stream capture (backends/cuda/graph.c). The launcher runs as usual with
 * drk::describing set on this thread; its one drk::launch records the
 * function, shape and arguments instead of launching. Only launchers
 * known to make exactly one drk::launch and no other CUDA call are run
 * so (a reduction's second pass is a <<<>>> launch and its result a
 * memset: those would run for real). */
#include "kernels/launch.cuh"

namespace {

typedef int (*Launcher)(const DrKLaunch *);

/* The launchers that make one drk::launch and nothing else. */
const Launcher kOneLaunch[] = {
    dr__k_add_bf16_launch,         dr__k_add_f16_launch,
    dr__k_add_f32_launch,          dr__k_axpy_f32_launch,
    dr__k_fill_f32_launch,         dr__k_gelu_f32_launch,
    dr__k_iota_f32_launch,         dr__k_layernorm_rows_f32_launch,
    dr__k_mul_f32_launch,          dr__k_relu_f32_launch,
    dr__k_scale_bf16_launch,       dr__k_scale_f16_launch,
    dr__k_scale_f32_launch,        dr__k_set_while_gt_f32_launch,
    dr__k_softmax_rows_f32_launch, dr__k_spin_launch,
};

}  // namespace

extern "C" int dr__k_describe(const DrKernelDef *def, const DrKLaunch *l, DrKDescribed *out) {
  if (def == nullptr || l == nullptr || out == nullptr) return -1;
  bool known = false;
  for (Launcher f : kOneLaunch) known = known || f == def->launch;
  if (!known) return -1;
  memset(out, 0, sizeof *out);
  drk::Describing d{out, 0, 0};
  drk::describing = &d;
  int rc = def->launch(l);
  drk::describing = nullptr;
  return rc == 0 && d.launches == 1 ? 0 : -1;
}
