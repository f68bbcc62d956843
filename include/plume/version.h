/* plume/version.h: the library's version.
 *
 * The macros give the version of the headers an application was compiled against;
 * plm_version_string() gives the version of the library it runs with. CMake reads
 * the three numbers below, so this file is the single place the version is set.
 */
#ifndef PLUME_VERSION_H
#define PLUME_VERSION_H

#include "plume/export.h"

#define PLM_VERSION_MAJOR 0
#define PLM_VERSION_MINOR 1
#define PLM_VERSION_PATCH 0

/* One integer that compares in version order: 10000 * major + 100 * minor + patch. */
#define PLM_VERSION_NUMBER (PLM_VERSION_MAJOR * 10000 + PLM_VERSION_MINOR * 100 + PLM_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library in use. Never NULL; thread-safe. */
PLM_API const char *plm_version_string(void);

/* PLM_VERSION_NUMBER of the library in use. Thread-safe. */
PLM_API int plm_version_number(void);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_VERSION_H */
