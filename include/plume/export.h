/* plume/export.h: symbol visibility for the public API.
 *
 * libplume is built with hidden visibility; only functions marked PLM_API are
 * exported from the shared library. Internal functions (plm__*) stay hidden.
 */
#ifndef PLUME_EXPORT_H
#define PLUME_EXPORT_H

#if defined(_WIN32)
#define PLM_API
#elif defined(__GNUC__) || defined(__clang__)
#define PLM_API __attribute__((visibility("default")))
#else
#define PLM_API
#endif

#endif /* PLUME_EXPORT_H */
