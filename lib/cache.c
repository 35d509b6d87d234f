/* cache.c: the public library's hold on the on-disk cache of NVRTC-compiled
 * user kernels (include/dagrun/dagrun.h, dr_kernel_cache_clean): what
 * `dagrun --cache-clean` calls. Keys, bounds and eviction are
 * backends/nvrtc_cache.c's and nvrtc_evict.c's; this file only exposes the
 * cleaning. */
#include "backends/nvrtc_cache.h"
#include "lib/api_internal.h"

gboolean dr_kernel_cache_clean(char **dir, guint *entries, guint64 *bytes, GError **error) {
  g_return_val_if_fail(entries != NULL && bytes != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  g_autofree char *where = dr__nvrtc_cache_dir();
  if (!dr__nvrtc_cache_clean(where, entries, bytes, error)) return FALSE;
  if (dir) *dir = g_steal_pointer(&where);
  return TRUE;
}
