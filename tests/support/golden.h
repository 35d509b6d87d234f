/* golden.h: the golden-file comparison the tests share: the text a test
 * produced against a file checked in beside it, and the regeneration mode
 * (DAGRUN_REGEN=1 under `bazel run`) that rewrites the file instead.
 * Test-only. tests/golden's own runner keeps its regen directory. */
#ifndef DAGRUN_TESTS_SUPPORT_GOLDEN_H
#define DAGRUN_TESTS_SUPPORT_GOLDEN_H

/* Compares `actual` with the file `dir`/`name` (dir relative to the
 * workspace, e.g. "tests/planner/golden"; read from the test's runfiles);
 * a test failure when they differ, and an error naming `target` (the
 * test to `bazel run` with DAGRUN_REGEN=1) when the file cannot be read.
 * With DAGRUN_REGEN set and BUILD_WORKSPACE_DIRECTORY known (bazel run),
 * writes `actual` into the source tree's file instead. */
void dr_test_check_golden(const char *dir, const char *target, const char *name, const char *actual);

#endif
