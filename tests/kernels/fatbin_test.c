/* fatbin_test.c: checks, on the CPU, which GPU architectures the built-in
 * kernels were compiled for. It reads the fatbinaries nvcc embedded (ELF
 * section .nv_fatbin) in each kernel object and in the linked dagrun
 * binary, and in every fatbinary finds exactly the documented choice
 * (README "GPU architectures", kernels/cuda_archs.bzl): a SASS cubin for
 * each of sm_75 ... sm_121, identified by the cubin's own ELF header
 * (e_machine EM_CUDA, the SM in e_flags) and agreeing with the fatbinary
 * entry's header, plus PTX for compute_121. cuobjdump is not needed (it is
 * only on the device machine).
 *
 * The fatbinary layout (not documented by NVIDIA; the one CUDA 11-13 write):
 * a 16-byte header {u32 magic 0xBA55ED50, u16 version, u16 header size,
 * u64 size of the entries}, then entries {u16 kind (1 PTX, 2 ELF), u16
 * version, u32 header size, u64 payload size, ..., u32 arch at byte 28}
 * each followed by its payload. A linked binary holds one fatbinary per
 * object, concatenated with zero padding between them.
 *
 * Usage (Bazel passes the files): fatbin_test BINARY OBJECT... */
#include <elf.h>
#include <glib.h>
#include <string.h>

/* The documented choice: SASS for these, PTX for PTX_ARCH. */
static const char *const sass_archs = "75 80 86 87 88 89 90 100 103 110 120 121";
static const char *const ptx_archs = "121";

static char **files;
static int n_files;

#define FATBIN_MAGIC 0xBA55ED50u

/* The archs found in one file's fatbinaries, as space-separated numbers in
 * the order they appear, one string per fatbinary. */
typedef struct {
  GPtrArray *sass; /* char*, one per fatbinary */
  GPtrArray *ptx;
} Found;

static guint32 rd32(const guint8 *p) {
  guint32 v;
  memcpy(&v, p, 4);
  return v;
}

static guint64 rd64(const guint8 *p) {
  guint64 v;
  memcpy(&v, p, 8);
  return v;
}

/* The section named `name` of the ELF64 image data[0..len), or NULL. */
static const guint8 *elf_section(const guint8 *data, gsize len, const char *name, gsize *size) {
  g_assert_cmpuint(len, >=, sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  memcpy(&eh, data, sizeof eh);
  g_assert_cmpmem(eh.e_ident, SELFMAG, ELFMAG, SELFMAG);
  g_assert_cmpint(eh.e_ident[EI_CLASS], ==, ELFCLASS64);
  g_assert_cmpuint(eh.e_shoff + (guint64)eh.e_shnum * sizeof(Elf64_Shdr), <=, len);
  Elf64_Shdr strtab;
  memcpy(&strtab, data + eh.e_shoff + (gsize)eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof strtab);
  for (guint i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, data + eh.e_shoff + (gsize)i * sizeof sh, sizeof sh);
    g_assert_cmpuint(strtab.sh_offset + sh.sh_name, <, len);
    if (strcmp((const char *)data + strtab.sh_offset + sh.sh_name, name) != 0) continue;
    g_assert_cmpuint(sh.sh_offset + sh.sh_size, <=, len);
    *size = sh.sh_size;
    return data + sh.sh_offset;
  }
  return NULL;
}

/* The SM of a cubin (an ELF of machine EM_CUDA) from its e_flags: bits
 * 8-15 from ELF ABI version 8 on (CUDA 12.8+), bits 0-7 before. */
static guint cubin_sm(const guint8 *p, gsize len) {
  g_assert_cmpuint(len, >=, sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  memcpy(&eh, p, sizeof eh);
  g_assert_cmpmem(eh.e_ident, SELFMAG, ELFMAG, SELFMAG);
  g_assert_cmpuint(eh.e_machine, ==, 190 /* EM_CUDA */);
  return eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xffu : eh.e_flags & 0xffu;
}

/* Parses every fatbinary of the section into `f`. */
static void parse_fatbins(const guint8 *sec, gsize len, Found *f) {
  gsize off = 0;
  while (off + 16 <= len) {
    if (rd32(sec + off) != FATBIN_MAGIC) {
      g_assert_cmpuint(rd32(sec + off), ==, 0); /* padding between fatbinaries */
      off += 4;
      continue;
    }
    guint hsize = sec[off + 6] | (guint)sec[off + 7] << 8;
    guint64 body = rd64(sec + off + 8);
    g_assert_cmpuint(off + hsize + body, <=, len);
    GString *sass = g_string_new(NULL), *ptx = g_string_new(NULL);
    const guint8 *p = sec + off + hsize, *end = p + body;
    while (p < end) {
      g_assert_cmpuint(end - p, >=, 32);
      guint kind = p[0] | (guint)p[1] << 8;
      guint32 ehsize = rd32(p + 4);
      guint64 psize = rd64(p + 8);
      guint32 arch = rd32(p + 28);
      g_assert_cmpuint(ehsize + psize, <=, (guint64)(end - p));
      const guint8 *payload = p + ehsize;
      if (kind == 2) {
        /* SASS: the cubin's own header must name the same SM. */
        g_assert_cmpuint(cubin_sm(payload, psize), ==, arch);
        g_string_append_printf(sass, "%s%u", sass->len ? " " : "", arch);
      } else {
        g_assert_cmpuint(kind, ==, 1);
        g_string_append_printf(ptx, "%s%u", ptx->len ? " " : "", arch);
      }
      p += ehsize + psize;
    }
    g_ptr_array_add(f->sass, g_string_free(sass, FALSE));
    g_ptr_array_add(f->ptx, g_string_free(ptx, FALSE));
    off += hsize + body;
  }
}

/* Reads `path` and asserts at least `min_fatbins` fatbinaries, each with
 * exactly the documented SASS and PTX architectures. */
static void check_file(const char *path, guint min_fatbins) {
  g_autofree gchar *data = NULL;
  gsize len = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_file_get_contents(path, &data, &len, &error));
  g_assert_no_error(error);
  gsize sec_len = 0;
  const guint8 *sec = elf_section((const guint8 *)data, len, ".nv_fatbin", &sec_len);
  if (sec == NULL) g_error("%s: no .nv_fatbin section", path);
  Found f = {g_ptr_array_new_with_free_func(g_free), g_ptr_array_new_with_free_func(g_free)};
  parse_fatbins(sec, sec_len, &f);
  g_test_message("%s: %u fatbinaries", path, f.sass->len);
  g_assert_cmpuint(f.sass->len, >=, min_fatbins);
  for (guint i = 0; i < f.sass->len; i++) {
    g_assert_cmpstr(g_ptr_array_index(f.sass, i), ==, sass_archs);
    g_assert_cmpstr(g_ptr_array_index(f.ptx, i), ==, ptx_archs);
  }
  g_ptr_array_unref(f.sass);
  g_ptr_array_unref(f.ptx);
}

/* Each nvcc object of kernels/ holds one fatbinary. */
static void test_objects(void) {
  g_assert_cmpint(n_files, >=, 2);
  for (int i = 1; i < n_files; i++) check_file(files[i], 1);
}

/* The linked dagrun: one fatbinary per linked nvcc object, all with the
 * same architectures: at least the four launchers' objects (elementwise,
 * reduce, rows, spin) and the backend's stamp kernel; blas_abi.cu.o is
 * linked only into programs that call its functions. */
static void test_binary(void) {
  g_assert_cmpint(n_files, >=, 2);
  check_file(files[0], 5);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  files = argv + 1;
  n_files = argc - 1;
  g_test_add_func("/kernels/fatbin/objects", test_objects);
  g_test_add_func("/kernels/fatbin/binary", test_binary);
  return g_test_run();
}
