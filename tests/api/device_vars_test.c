/* device_vars_test.c: the read-only expression variables device.NAME
 * (lib/device_vars.c) through the public library: the host backend's
 * documented table (docs/format.md), every name of it, an unknown name,
 * `device.` alone, and that a name never shadows or is shadowed by a loop
 * variable called `device`. The CUDA values are checked on the H200 by
 * tests/gpu/run.sh (gpu/device-vars). */
#include <glib.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

/* The ids of `yaml`'s nodes after loading, one per line. */
static char *ids(const char *yaml, GError **error) {
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("t.yaml", yaml, -1, error);
  if (p == NULL) return NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_yaml(p, out, NULL));
  GString *got = g_string_new(NULL);
  for (const char *l = strstr(out->str, "\nnodes:\n"); l && (l = strstr(l + 1, "\n  ")) != NULL;) {
    const char *colon = strchr(l + 3, ':');
    const char *id = l + 3 + (l[3] == '"'), *end = colon - (colon[-1] == '"');
    g_string_append_len(got, id, end - id);
    g_string_append_c(got, '\n');
  }
  return g_string_free(got, FALSE);
}

static void test_host_table(void) {
  dr_device_vars_select(DR_BACKEND_HOST, 0);
  const char *names[] = {"sm_count",           "clock_khz",
                         "cc_major",           "cc_minor",
                         "warp_size",          "max_threads_per_block",
                         "max_threads_per_sm", "smem_per_block_optin",
                         "smem_per_sm",        "l2_bytes"};
  const gint64 want[] = {132, 1980000, 9, 0, 32, 1024, 2048, 232448, 233472, 52428800};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autofree char *yaml = g_strdup_printf("dagrun: 1\nnodes:\n  n{device.%s}: {op: noop}\n", names[i]);
    g_autoptr(GError) error = NULL;
    g_autofree char *got = ids(yaml, &error);
    g_assert_no_error(error);
    g_autofree char *expect = g_strdup_printf("n%" G_GINT64_FORMAT "\n", want[i]);
    g_assert_cmpstr(got, ==, expect);
  }
  /* In ranges, slices and with a loop variable named `device` beside it. */
  g_autoptr(GError) error = NULL;
  g_autofree char *got =
      ids("dagrun: 1\nnodes:\n  s{device}_{device.cc_major * 10 + device.cc_minor}:\n"
          "    foreach: {device: \"0..device.sm_count / 66 - 1\"}\n    op: noop\n",
          &error);
  g_assert_no_error(error);
  g_assert_cmpstr(got, ==, "s0_90\ns1_90\n");
  dr_device_vars_select(DR_BACKEND_AUTO, 0);
}

static void test_errors(void) {
  dr_device_vars_select(DR_BACKEND_HOST, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p =
      dr_pipeline_load_string("t.yaml", "dagrun: 1\nnodes:\n  n{device.sms}: {op: noop}\n", -1, &error);
  g_assert_null(p);
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(
      strstr(error->message, "unknown device variable 'device.sms' (the device variables: device.sm_count,"));
  g_clear_error(&error);
  g_autoptr(DrPipeline) q =
      dr_pipeline_load_string("t.yaml", "dagrun: 1\nnodes:\n  n{device.}: {op: noop}\n", -1, &error);
  g_assert_null(q);
  g_assert_nonnull(strstr(error->message, "'device.' needs a name"));
  dr_device_vars_select(DR_BACKEND_AUTO, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/api/device-vars/host-table", test_host_table);
  g_test_add_func("/api/device-vars/errors", test_errors);
  return g_test_run();
}
