/* version.h: dagrun's version, the one source of truth for the library
 * (dr_version) and the command line (`dagrun --version`). Plain C, no
 * GLib: it can be included anywhere, also from build scripts. */
#ifndef DAGRUN_VERSION_H
#define DAGRUN_VERSION_H

#define DAGRUN_VERSION_MAJOR 0
#define DAGRUN_VERSION_MINOR 1
#define DAGRUN_VERSION_PATCH 0

#define DAGRUN_VERSION_STR_(x) #x
#define DAGRUN_VERSION_STR(x) DAGRUN_VERSION_STR_(x)
/* "MAJOR.MINOR.PATCH" */
#define DAGRUN_VERSION_STRING              \
  DAGRUN_VERSION_STR(DAGRUN_VERSION_MAJOR) \
  "." DAGRUN_VERSION_STR(DAGRUN_VERSION_MINOR) "." DAGRUN_VERSION_STR(DAGRUN_VERSION_PATCH)

/* TRUE when the headers are at least version MAJOR.MINOR.PATCH. */
#define DAGRUN_CHECK_VERSION(major, minor, patch)                                                           \
  (DAGRUN_VERSION_MAJOR > (major) || (DAGRUN_VERSION_MAJOR == (major) && DAGRUN_VERSION_MINOR > (minor)) || \
   (DAGRUN_VERSION_MAJOR == (major) && DAGRUN_VERSION_MINOR == (minor) && DAGRUN_VERSION_PATCH >= (patch)))

#endif
