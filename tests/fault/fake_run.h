/* fake_run.h: what the tests of the CUDA backend on the fake table
 * (fake_cuda.h) each did for themselves: load a pipeline that must load,
 * run a plan with the kernels' host twins running and read back what it
 * saved, count calls in the fake's trace, and (the public API's side)
 * set the fake up for a DrRunner and check it was left clean.
 *
 * Test-only, and not a harness: each function asserts what every caller
 * asserted (a g_assert failure ends the test), and the tests keep their
 * own checks. */
#ifndef DAGRUN_TESTS_FAULT_FAKE_RUN_H
#define DAGRUN_TESTS_FAULT_FAKE_RUN_H

#include <glib.h>

#include "backends/run.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "tests/fault/fake_cuda.h"

/* Loads pipeline text `yaml` as the file `name` (for its locations); it
 * must load, with no error. The caller owns the graph. */
DrGraph *dr_fake_load_yaml(const char *name, const char *yaml);

/* Options for a run of `g` on the fake: the CUDA backend in `mode` with
 * `timing`, `warmup` + `iterations` iterations, what host nodes print
 * discarded (written to /dev/null). */
DrRunOptions dr_fake_run_options(const DrGraph *g, DrMode mode, DrTimingMode timing, guint32 warmup,
                                 guint32 iterations);

/* Runs `plan` with `opts` after dr_fake_reset, with the kernels' host
 * twins running and, when `replay_graphs`, captured graphs replayed node
 * by node (both off again after), and asserts the run succeeded, left
 * nothing live and the fake saw no misuse. Returns the bytes the run saved
 * at `path` (a `save:` file, removed afterwards; *len their length), for
 * the caller to g_free. The report goes to *report when it is not NULL
 * (the caller frees it), else it is freed. */
char *dr_fake_run_saved(const DrPlan *plan, const DrRunOptions *opts, gboolean replay_graphs,
                        const char *path, gsize *len, DrReport **report);

/* Plans `g` with the default options; it must plan. The caller owns the
 * plan. */
DrPlan *dr_fake_plan(const DrGraph *g);

/* Runs `plan` on `backend` in `mode` with `timing`, `iterations` timed
 * iterations and no warmup (with --verify when `verify`, which must then
 * pass) and returns what its host nodes printed, for the caller to
 * g_free; NULL when the run failed (*error set). Unlike
 * dr_fake_run_saved, the fake is not reset: the caller sets it up. */
char *dr_fake_run_printed(const DrPlan *plan, DrBackendKind backend, DrMode mode, DrTimingMode timing,
                          gboolean verify, guint32 iterations, GError **error);

/* What `plan`'s host nodes print on the host backend (streams mode,
 * `iterations` iterations), the reference a fake CUDA run is compared
 * with; the run must succeed. */
char *dr_fake_host_printed(const DrPlan *plan, guint32 iterations);

/* The call in the fake's trace that the armed fault failed, or NULL when
 * it has not fired. Borrowed: valid until the next call of the fake. */
const DrFakeCall *dr_fake_faulted_call(void);

/* The calls named `name` in the fake's trace from index `from` on. */
guint dr_fake_count_calls(guint from, const char *name);

#endif
