/* fake_runner.h: the public API's DrRunner on the fake CUDA table with
 * its graph-node model (fake_cuda.h): the setup the runner tests share
 * and the check that a test left the fake clean. Test-only; a companion
 * of fake_run.h for tests that use include/dagrun/dagrun.h only. */
#ifndef DAGRUN_TESTS_FAULT_FAKE_RUNNER_H
#define DAGRUN_TESTS_FAULT_FAKE_RUNNER_H

#include "include/dagrun/dagrun.h"

/* Resets the fake and makes it the CUDA table with the graph-node model
 * (dr_fake_api_graph_nodes), the host twins running, graphs replayed and
 * the default streams refused. */
void dr_fake_runner_start(void);

/* Asserts the fake saw no misuse and nothing is live, then undoes
 * dr_fake_runner_start: twins, replay and default streams off, the fake
 * reset, the plain table (dr_fake_api) installed. */
void dr_fake_runner_finish(void);

/* Ends a fault-sweep step: disarms the fault, frees runner `r`, asserts
 * the fake saw no misuse and nothing is live but the one object whose
 * release the fault failed (if it hit a release), then resets the fake
 * and calls dr_fake_runner_finish. */
void dr_fake_runner_free_faulted(DrRunner *r);

/* A runner of `plan` (of pipeline `p`) on the CUDA backend in `mode`, one
 * iteration, no warmup; it must be made. The caller frees it. */
DrRunner *dr_fake_cuda_runner(DrStreamPlan *plan, const DrPipeline *p, DrMode mode);

#endif
