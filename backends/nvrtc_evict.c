/* nvrtc_evict.c: the bounds of the NVRTC cubin cache and its cleaning
 * (contracts in nvrtc_cache.h). It manages the cache directory's files; it
 * neither compiles nor computes keys.
 *
 * An entry is the files of one key: <sha256 hex>.cubin and, for kernels
 * with name expressions, <sha256 hex>.names. Its age is the newest mtime of
 * its files; a hit sets them to now (dr__nvrtc_cache_touch), so "oldest"
 * is "least recently used". After every store the directory is bounded:
 * entries older than the age bound go, then the oldest go until the total
 * size fits the size bound (so one entry larger than the bound is not
 * kept). Leftover temporary files of a writer that died (<entry file>.XXXXXX
 * from g_file_set_contents) older than an hour go too; younger ones may be
 * a concurrent writer's. Only files named like that are ever touched, so a
 * cache directory shared with other files loses none of them.
 *
 * Concurrent processes: each file appears by rename, so no reader sees
 * half of one; two evicting processes may try to remove the same file (the
 * second's ENOENT is ignored), and an entry removed while another process
 * reads it is still read whole (POSIX unlink), or missed and recompiled. */
#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utime.h>

#include "backends/nvrtc_cache.h"
#include "ir/diag.h"

#define STEM_LEN 64
#define TEMP_GRACE_S 3600

/* What a file name in the cache directory is. */
typedef enum { FILE_OTHER, FILE_ENTRY, FILE_TEMP } FileKind;

/* Classifies `name`; *stem_len is STEM_LEN for entry and temp files. */
static FileKind classify(const char *name) {
  for (int i = 0; i < STEM_LEN; i++)
    if (!g_ascii_isxdigit(name[i]) || g_ascii_isupper(name[i])) return FILE_OTHER;
  const char *rest = name + STEM_LEN;
  if (strncmp(rest, ".cubin", 6) != 0 && strncmp(rest, ".names", 6) != 0) return FILE_OTHER;
  rest += 6;
  if (*rest == '\0') return FILE_ENTRY;
  if (*rest == '.' && strlen(rest + 1) == 6) return FILE_TEMP;
  return FILE_OTHER;
}

void dr__nvrtc_cache_touch(const char *path) {
  if (utime(path, NULL) != 0) g_debug("nvrtc cache: cannot touch %s: %s", path, g_strerror(errno));
}

/* Parses a byte count with an optional Ki/Mi/Gi (or KiB/MiB/GiB) suffix. */
static gboolean parse_bytes(const char *s, guint64 *out) {
  char *end = NULL;
  if (!g_ascii_isdigit(s[0])) return FALSE;
  errno = 0;
  guint64 v = g_ascii_strtoull(s, &end, 10);
  if (errno != 0) return FALSE;
  guint64 mult = 1;
  if (*end == 'K') mult = 1ull << 10;
  if (*end == 'M') mult = 1ull << 20;
  if (*end == 'G') mult = 1ull << 30;
  if (mult > 1) {
    end++;
    if (*end == 'i') end++;
    if (*end == 'B') end++;
  }
  if (*end != '\0' || (mult > 1 && v > G_MAXUINT64 / mult)) return FALSE;
  *out = v * mult;
  return TRUE;
}

void dr__nvrtc_cache_limits(guint64 *max_bytes, guint64 *max_age_s) {
  *max_bytes = DR_NVRTC_CACHE_MAX_BYTES_DEFAULT;
  *max_age_s = (guint64)DR_NVRTC_CACHE_MAX_AGE_DAYS_DEFAULT * 86400;
  const char *b = g_getenv("DAGRUN_CACHE_MAX_BYTES");
  if (b != NULL && *b && !parse_bytes(b, max_bytes)) {
    g_warning("DAGRUN_CACHE_MAX_BYTES='%s' is not a size (like 1073741824 or 512MiB); using 1GiB", b);
    *max_bytes = DR_NVRTC_CACHE_MAX_BYTES_DEFAULT;
  }
  const char *a = g_getenv("DAGRUN_CACHE_MAX_AGE_DAYS");
  guint64 days = 0;
  if (a != NULL && *a) {
    if (parse_bytes(a, &days) && strspn(a, "0123456789") == strlen(a) && days <= 1000000)
      *max_age_s = days * 86400;
    else
      g_warning("DAGRUN_CACHE_MAX_AGE_DAYS='%s' is not a number of days (0..1000000); using %d", a,
                DR_NVRTC_CACHE_MAX_AGE_DAYS_DEFAULT);
  }
}

typedef struct {
  char stem[STEM_LEN + 1];
  gint64 mtime; /* ns since the epoch */
  guint64 bytes;
} Entry;

static int by_age(gconstpointer a, gconstpointer b) {
  const Entry *x = a, *y = b;
  if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
  return strcmp(x->stem, y->stem);
}

/* Removes the files of entry `e` from `dir`; returns how many bytes went. */
static guint64 remove_entry(const char *dir, const Entry *e) {
  static const char *const exts[] = {".cubin", ".names"};
  guint64 gone = 0;
  for (gsize i = 0; i < G_N_ELEMENTS(exts); i++) {
    g_autofree char *file = g_strconcat(dir, G_DIR_SEPARATOR_S, e->stem, exts[i], NULL);
    struct stat st;
    if (g_stat(file, &st) == 0 && g_unlink(file) == 0) gone += (guint64)st.st_size;
  }
  return gone;
}

/* Lists the entries of `dir` (by stem) into `out`; removes temporary files
 * older than `temp_grace_s` (all of them when it is 0) and counts them in
 * *temps and *temp_bytes. */
static void list_entries(const char *dir, GArray *out, gint64 now, gint64 temp_grace_s, guint *temps,
                         guint64 *temp_bytes) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL) return;
  g_autoptr(GHashTable) index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  const char *name;
  while ((name = g_dir_read_name(d)) != NULL) {
    FileKind kind = classify(name);
    if (kind == FILE_OTHER) continue;
    g_autofree char *file = g_build_filename(dir, name, NULL);
    struct stat st;
    if (g_lstat(file, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    gint64 mtime_ns = (gint64)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (kind == FILE_TEMP) {
      if (now - (gint64)st.st_mtime >= temp_grace_s && g_unlink(file) == 0) {
        (*temps)++;
        *temp_bytes += (guint64)st.st_size;
      }
      continue;
    }
    char stem[STEM_LEN + 1];
    memcpy(stem, name, STEM_LEN);
    stem[STEM_LEN] = '\0';
    gpointer at = NULL;
    if (!g_hash_table_lookup_extended(index, stem, NULL, &at)) {
      Entry e = {.mtime = mtime_ns};
      memcpy(e.stem, stem, sizeof stem);
      g_array_append_val(out, e);
      at = GUINT_TO_POINTER(out->len);
      g_hash_table_insert(index, g_strdup(stem), at);
    }
    Entry *e = &g_array_index(out, Entry, GPOINTER_TO_UINT(at) - 1);
    e->bytes += (guint64)st.st_size;
    e->mtime = MAX(e->mtime, mtime_ns);
  }
  g_dir_close(d);
}

guint dr__nvrtc_cache_evict(const char *dir) {
  guint64 max_bytes, max_age_s;
  dr__nvrtc_cache_limits(&max_bytes, &max_age_s);
  gint64 now = g_get_real_time() / G_USEC_PER_SEC;
  g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(Entry));
  guint temps = 0;
  guint64 temp_bytes = 0;
  list_entries(dir, entries, now, TEMP_GRACE_S, &temps, &temp_bytes);
  g_array_sort(entries, by_age);
  guint64 total = 0;
  for (guint i = 0; i < entries->len; i++) total += g_array_index(entries, Entry, i).bytes;
  guint removed = 0;
  for (guint i = 0; i < entries->len; i++) {
    const Entry *e = &g_array_index(entries, Entry, i);
    gboolean too_old = max_age_s > 0 && now - e->mtime / 1000000000 > (gint64)max_age_s;
    gboolean too_big = max_bytes > 0 && total > max_bytes;
    if (!too_old && !too_big) break; /* the rest are younger */
    remove_entry(dir, e);
    total -= e->bytes;
    removed++;
  }
  if (removed) g_debug("nvrtc cache: evicted %u entries from %s", removed, dir);
  return removed;
}

gboolean dr__nvrtc_cache_clean(const char *dir, guint *n_entries, guint64 *n_bytes, GError **error) {
  g_return_val_if_fail(dir != NULL && n_entries != NULL && n_bytes != NULL, FALSE);
  *n_entries = 0;
  *n_bytes = 0;
  g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(Entry));
  guint temps = 0;
  list_entries(dir, entries, g_get_real_time() / G_USEC_PER_SEC, 0, &temps, n_bytes);
  for (guint i = 0; i < entries->len; i++) {
    const Entry *e = &g_array_index(entries, Entry, i);
    guint64 gone = remove_entry(dir, e);
    *n_bytes += gone;
    if (gone < e->bytes) {
      g_autofree char *file = g_strconcat(dir, G_DIR_SEPARATOR_S, e->stem, ".cubin", NULL);
      if (g_file_test(file, G_FILE_TEST_EXISTS)) {
        int err = errno;
        g_set_error(error, DR_ERROR, DR_ERROR_OUTPUT, "%s: error: cannot remove: %s", file, g_strerror(err));
        return FALSE;
      }
    }
    (*n_entries)++;
  }
  return TRUE;
}
