/* elem_types.h: the element types of dagrun buffers and kernel parameters,
 * as one X-macro list shared by the IR (GLib) and the kernel library (plain
 * C). It is data only: no functions, no GLib, no CUDA. */
#ifndef DAGRUN_ELEM_TYPES_H
#define DAGRUN_ELEM_TYPES_H

/* X(ENUM_SUFFIX, yaml_spelling, size_in_bytes) */
#define DR_ELEM_TYPE_LIST(X) \
  X(U8, "u8", 1)             \
  X(I32, "i32", 4)           \
  X(I64, "i64", 8)           \
  X(F16, "f16", 2)           \
  X(BF16, "bf16", 2)         \
  X(F32, "f32", 4)           \
  X(F64, "f64", 8)

typedef enum {
#define DR_X(e, s, n) DR_ELEM_##e,
  DR_ELEM_TYPE_LIST(DR_X)
#undef DR_X
  DR_ELEM_N_TYPES
} DrElemType;

/* X(ENUM_SUFFIX, yaml_spelling, reads, writes) */
#define DR_ACCESS_MODE_LIST(X)  \
  X(READ, "read", 1, 0)         \
  X(WRITE, "write", 0, 1)       \
  X(READ_WRITE, "readwrite", 1, 1)

typedef enum {
#define DR_X(e, s, r, w) DR_ACCESS_##e,
  DR_ACCESS_MODE_LIST(DR_X)
#undef DR_X
  DR_ACCESS_N_MODES
} DrAccessMode;

#endif
