/* support/hdf5_io.c: HDF5 and NetCDF-4 datasets through libhdf5 (support/hdf5_io.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/hdf5_io.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <float.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/image_io.h"
#include "support/quote.h"

enum {
  WHY_SIZE = 512,         /* libhdf5's account of a failure (hdf5_why) */
  MOST_FILLS = 16,        /* values of missing_value taken */
  MOST_LISTED = 8,        /* datasets named in a message */
  MOST_VISITED = 100000,  /* links looked at when no dataset is named */
  MOST_DEPTH = 32,        /* groups within groups walked */
  BAND_SAMPLES = 1 << 16, /* samples read from the file per call: a band of rows */
};

/* The chunk cache of a dataset: one frame's chunks, within these bounds. */
#define CHUNK_CACHE_MOST ((size_t)64 << 20)
#define CHUNK_CACHE_LEAST ((size_t)1 << 20)

struct hdf5_frames {
  hid_t file, dataset, space; /* space: the dataset's, where each band is selected */
  int fd;                     /* the file libhdf5 opened again, held to see it shrink */
  off_t size;                 /* its bytes when opened */
  char *path;                 /* the file, for messages */
  char *name;                 /* the dataset's full name ("/radiance") */
  plm_dtype dtype;
  int rank;
  int64_t height, width, count;
  bool physical; /* scale, offset and fills are applied (a CF attribute was found) */
  double scale, offset;
  int fill_count;
  double fill[MOST_FILLS];
  double *band; /* band_rows x width samples, as libhdf5 converts them to double */
  int64_t band_rows;
};

bool hdf5_magic(const unsigned char *bytes, size_t length) {
  return length >= 8 && memcmp(bytes, "\211HDF\r\n\032\n", 8) == 0;
}

bool netcdf_classic_magic(const unsigned char *bytes, size_t length) {
  return length >= 4 && memcmp(bytes, "CDF", 3) == 0 &&
         (bytes[3] == 1 || bytes[3] == 2 || bytes[3] == 5);
}

/* ---- libhdf5's error stack ------------------------------------------------------------- */

/* The default stack's automatic printing, off while plume calls libhdf5 and put back after. */
typedef struct quiet {
  H5E_auto2_t func;
  void *data;
} quiet;

static void quiet_begin(quiet *q) {
  q->func = NULL;
  q->data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void quiet_end(const quiet *q) {
  H5Eclear2(H5E_DEFAULT);
  H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

typedef struct why_walk {
  char first[WHY_SIZE / 2 - 4], last[WHY_SIZE / 2 - 4];
  int count;
} why_walk;

static herr_t why_step(unsigned n, const H5E_error2_t *entry, void *data) {
  (void)n;
  why_walk *w = data;
  const char *desc = entry->desc && entry->desc[0] ? entry->desc : "(no description)";
  if (w->count++ == 0) snprintf(w->first, sizeof w->first, "%s", desc);
  snprintf(w->last, sizeof w->last, "%s", desc);
  return 0;
}

/* libhdf5's account of the failure on the default stack: the API call's complaint and, when
 * it differs, the innermost one, where the fault was found ("unable to open file (truncated
 * file: eof = 1200, ...)"). The stack is cleared for the next call. */
static const char *hdf5_why(char text[WHY_SIZE]) {
  why_walk w = {.count = 0};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, why_step, &w);
  H5Eclear2(H5E_DEFAULT);
  if (w.count == 0)
    snprintf(text, WHY_SIZE, "libhdf5 failed without a reason");
  else if (w.count == 1 || strcmp(w.first, w.last) == 0)
    snprintf(text, WHY_SIZE, "%s", w.first);
  else
    snprintf(text, WHY_SIZE, "%s (%s)", w.first, w.last);
  return text;
}

/* ---- closing --------------------------------------------------------------------------- */

void hdf5_frames_close(hdf5_frames *f) {
  if (!f) return;
  quiet q;
  quiet_begin(&q);
  if (f->space >= 0) H5Sclose(f->space);
  if (f->dataset >= 0) H5Dclose(f->dataset);
  if (f->file >= 0) H5Fclose(f->file);
  quiet_end(&q);
  if (f->fd >= 0) close(f->fd);
  free(f->band);
  free(f->name);
  free(f->path);
  free(f);
}

/* ---- choosing the dataset -------------------------------------------------------------- */

/* The rank and class of a dataset, without reading it: *rank -1 when it cannot be opened. */
static void describe_dataset(hid_t where, const char *name, int *rank, H5T_class_t *type_class) {
  *rank = -1;
  *type_class = H5T_NO_CLASS;
  const hid_t d = H5Dopen2(where, name, H5P_DEFAULT);
  if (d < 0) return;
  const hid_t space = H5Dget_space(d), type = H5Dget_type(d);
  if (space >= 0) *rank = H5Sget_simple_extent_ndims(space);
  if (type >= 0) *type_class = H5Tget_class(type);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  H5Dclose(d);
  H5Eclear2(H5E_DEFAULT);
}

static bool numeric(H5T_class_t c) {
  return c == H5T_INTEGER || c == H5T_FLOAT;
}

static const char *class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integers";
    case H5T_FLOAT: return "floats";
    case H5T_TIME: return "times";
    case H5T_STRING: return "strings";
    case H5T_BITFIELD: return "bit fields";
    case H5T_OPAQUE: return "opaque bytes";
    case H5T_COMPOUND: return "compounds";
    case H5T_REFERENCE: return "references";
    case H5T_ENUM: return "enums";
    case H5T_VLEN: return "variable-length sequences";
    case H5T_ARRAY: return "arrays";
    default: return "elements of no known class";
  }
}

/* The datasets of a file, as walk_group finds them: the candidates (2 or 3 dimensions of
 * numbers) and, for a message, the first few of each kind. */
typedef struct dataset_list {
  int candidates, others, visited;
  bool cut; /* more than MOST_VISITED links or MOST_DEPTH groups deep: not all were seen */
  char *candidate[MOST_LISTED];
  char *other[MOST_LISTED]; /* "/time (1-D integers)" */
  bool out_of_memory;
  int depth;
  char where[1024]; /* the full name of the group walked */
} dataset_list;

static void list_free(dataset_list *l) {
  for (int i = 0; i < MOST_LISTED; i++) {
    free(l->candidate[i]);
    free(l->other[i]);
  }
}

static void list_dataset(dataset_list *l, hid_t group, const char *name) {
  int rank;
  H5T_class_t type_class;
  describe_dataset(group, name, &rank, &type_class);
  const bool candidate = (rank == 2 || rank == 3) && numeric(type_class);
  int *count = candidate ? &l->candidates : &l->others;
  if (*count < MOST_LISTED) {
    char **slot = candidate ? &l->candidate[*count] : &l->other[*count];
    char text[sizeof l->where + 256];
    if (candidate)
      snprintf(text, sizeof text, "%s/%s", l->where, name);
    else if (rank < 0)
      snprintf(text, sizeof text, "%s/%s (unreadable)", l->where, name);
    else
      snprintf(text, sizeof text, "%s/%s (%d-D %s)", l->where, name, rank, class_name(type_class));
    *slot = strdup(text);
    if (!*slot) l->out_of_memory = true;
  }
  ++*count;
}

static herr_t visit_link(hid_t group, const char *name, const H5L_info_t *link, void *data);

/* The links of group (l->where), datasets listed and groups walked in turn: hard links only
 * (a soft or external link names another file or an object found elsewhere), MOST_DEPTH
 * groups deep at most (hard links may make a cycle). Not H5Ovisit2: on some damaged files
 * libhdf5 1.10's fails leaving free-list blocks behind, and then prints "infinite loop
 * closing library" at exit. */
static herr_t walk_group(dataset_list *l, hid_t group) {
  return H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, NULL, visit_link, l);
}

static herr_t visit_link(hid_t group, const char *name, const H5L_info_t *link, void *data) {
  dataset_list *l = data;
  if (++l->visited > MOST_VISITED) {
    l->cut = true;
    return 1;
  }
  if (link->type != H5L_TYPE_HARD) return 0;
  H5O_info_t object;
  if (H5Oget_info_by_name2(group, name, &object, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return -1;
  if (object.type == H5O_TYPE_DATASET) list_dataset(l, group, name);
  if (l->out_of_memory) return -1;
  if (object.type != H5O_TYPE_GROUP) return 0;
  const size_t length = strlen(l->where);
  if (l->depth >= MOST_DEPTH || length + 1 + strlen(name) >= sizeof l->where) {
    l->cut = true;
    return 0;
  }
  const hid_t inner = H5Gopen2(group, name, H5P_DEFAULT);
  if (inner < 0) return -1;
  snprintf(l->where + length, sizeof l->where - length, "/%s", name);
  l->depth++;
  const herr_t walked = walk_group(l, inner);
  l->depth--;
  l->where[length] = '\0';
  H5Gclose(inner);
  return walked;
}

/* "a, b, c" of names[0..min(count, MOST_LISTED)), "..." when there are more. */
static const char *join(char *const *names, int count, char *text, size_t size) {
  size_t used = 0;
  text[0] = '\0';
  for (int i = 0; i < count && i < MOST_LISTED && used < size; i++)
    used += (size_t)snprintf(text + used, size - used, "%s%s", i ? ", " : "", names[i]);
  if (count > MOST_LISTED && used < size) snprintf(text + used, size - used, ", ...");
  return text;
}

static plm_status list_datasets(hdf5_frames *f, dataset_list *l, char *err, size_t err_size) {
  char why[WHY_SIZE];
  *l = (dataset_list){.candidates = 0};
  if (walk_group(l, f->file) < 0) {
    if (l->out_of_memory) {
      H5Eclear2(H5E_DEFAULT);
      return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
    }
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: listing its datasets failed: %s", f->path,
                         hdf5_why(why));
  }
  return PLM_OK;
}

/* The dataset named (its full name into f->name), or the file's only candidate. */
static plm_status choose_dataset(hdf5_frames *f, const char *dataset, char *err, size_t err_size) {
  dataset_list l;
  char listed[QUOTE_MESSAGE_SIZE / 2];
  plm_status status = PLM_OK;
  if (dataset && dataset[0]) {
    const size_t length = strlen(dataset) + 2;
    f->name = malloc(length);
    if (!f->name)
      return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
    snprintf(f->name, length, "%s%s", dataset[0] == '/' ? "" : "/", dataset);
    H5O_info_t info;
    if (H5Oget_info_by_name2(f->file, f->name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
      H5Eclear2(H5E_DEFAULT);
      status = list_datasets(f, &l, err, err_size);
      if (status == PLM_OK)
        status = quote_failure(
            err, err_size, PLM_ERR_IO, "%s: no dataset %s (its datasets of 2 or 3 dimensions: %s)",
            f->path, f->name,
            l.candidates ? join(l.candidate, l.candidates, listed, sizeof listed) : "none");
      list_free(&l);
      return status;
    }
    if (info.type != H5O_TYPE_DATASET)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: %s is a %s, not a dataset", f->path,
                           f->name, info.type == H5O_TYPE_GROUP ? "group" : "named datatype");
    return PLM_OK;
  }
  status = list_datasets(f, &l, err, err_size);
  if (status == PLM_OK && l.candidates == 1) {
    f->name = strdup(l.candidate[0]);
    if (!f->name)
      status = quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
  } else if (status == PLM_OK && l.candidates > 1) {
    status = quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: %d datasets of 2 or 3 dimensions (%s): name one, as %s:%s", f->path,
                           l.candidates, join(l.candidate, l.candidates, listed, sizeof listed),
                           f->path, l.candidate[0]);
  } else if (status == PLM_OK) {
    status = quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: no dataset of 2 or 3 dimensions of numbers%s (%s%s)", f->path,
                           l.cut ? " among those looked at (100000 links, 32 groups deep)" : "",
                           l.others ? "its datasets: " : "it holds no dataset",
                           l.others ? join(l.other, l.others, listed, sizeof listed) : "");
  }
  list_free(&l);
  return status;
}

/* ---- the dataset's kind ---------------------------------------------------------------- */

#define FAIL(status, ...) quote_failure(err, err_size, (status), __VA_ARGS__)

/* Whether type is one of HDF5's standard integers of 8 or 16 bits or IEEE floats of 32 or 64,
 * in either byte order: every bit used, no offset or padding. libhdf5 converts any other
 * layout bit by bit, and that conversion (H5T__conv_i_f, H5T__bit_get_d) overran its stack
 * on a damaged datatype fuzz_hdf5 made (seed integer-layout-stack-smash): refused. */
static bool standard_layout(hid_t type) {
  const hid_t standard[] = {H5T_STD_U8LE,   H5T_STD_U8BE,   H5T_STD_I8LE,   H5T_STD_I8BE,
                            H5T_STD_U16LE,  H5T_STD_U16BE,  H5T_STD_I16LE,  H5T_STD_I16BE,
                            H5T_IEEE_F32LE, H5T_IEEE_F32BE, H5T_IEEE_F64LE, H5T_IEEE_F64BE};
  for (size_t i = 0; i < sizeof standard / sizeof *standard; i++)
    if (H5Tequal(type, standard[i]) > 0) return true;
  return false;
}

/* The frames' dtype from the element type (support/hdf5_io.h), before any CF attribute. */
static plm_status choose_dtype(hdf5_frames *f, char *err, size_t err_size) {
  char why[WHY_SIZE];
  const hid_t type = H5Dget_type(f->dataset);
  if (type < 0)
    return FAIL(PLM_ERR_IO, "%s: dataset %s: its element type: %s", f->path, f->name,
                hdf5_why(why));
  const H5T_class_t type_class = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  const H5T_sign_t sign = type_class == H5T_INTEGER ? H5Tget_sign(type) : H5T_SGN_ERROR;
  const bool standard = standard_layout(type);
  H5Tclose(type);
  H5Eclear2(H5E_DEFAULT);
  const bool sizes_read = (type_class == H5T_INTEGER && (size == 1 || size == 2)) ||
                          (type_class == H5T_FLOAT && (size == 4 || size == 8));
  if (sizes_read && !standard)
    return FAIL(PLM_ERR_UNSUPPORTED,
                "%s: dataset %s: %zu-byte %s of a layout other than the standard ones (bits "
                "used, offset, padding or exponent): not read, for libhdf5 1.10 converts such "
                "types bit by bit and overran its stack on a damaged one",
                f->path, f->name, size, class_name(type_class));
  if (type_class == H5T_INTEGER && (size == 1 || size == 2) && sign == H5T_SGN_NONE) {
    f->dtype = size == 1 ? PLM_DTYPE_U8 : PLM_DTYPE_U16;
    return PLM_OK;
  }
  if ((type_class == H5T_INTEGER && (size == 1 || size == 2) && sign == H5T_SGN_2) ||
      (type_class == H5T_FLOAT && (size == 4 || size == 8))) {
    f->dtype = PLM_DTYPE_F32;
    return PLM_OK;
  }
  if (type_class == H5T_INTEGER || type_class == H5T_FLOAT)
    return FAIL(PLM_ERR_UNSUPPORTED,
                "%s: dataset %s: %zu-bit %s: 8- and 16-bit integers and 32- and 64-bit floats "
                "are read",
                f->path, f->name, size * 8, class_name(type_class));
  return FAIL(PLM_ERR_UNSUPPORTED, "%s: dataset %s: a dataset of %s: numbers are read", f->path,
              f->name, class_name(type_class));
}

/* The frames' shape from the dataspace: (H, W) one frame, (N, H, W) N frames. */
static plm_status choose_shape(hdf5_frames *f, int *ndim, char *err, size_t err_size) {
  char why[WHY_SIZE];
  f->space = H5Dget_space(f->dataset);
  const int rank = f->space >= 0 ? H5Sget_simple_extent_ndims(f->space) : -1;
  if (rank < 0)
    return FAIL(PLM_ERR_IO, "%s: dataset %s: its dataspace: %s", f->path, f->name, hdf5_why(why));
  hsize_t dims[H5S_MAX_RANK] = {0};
  H5Sget_simple_extent_dims(f->space, dims, NULL);
  if (rank != 2 && rank != 3) {
    char shape[256] = "";
    size_t used = 0;
    for (int d = 0; d < rank && used < sizeof shape; d++)
      used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%llu", d ? ", " : "",
                               (unsigned long long)dims[d]);
    return FAIL(PLM_ERR_UNSUPPORTED,
                "%s: dataset %s: %d-D (%s): datasets of 2 dimensions (H, W) and of 3 (N, H, W) "
                "are read",
                f->path, f->name, rank, shape);
  }
  for (int d = 0; d < rank; d++)
    if (dims[d] < 1 || dims[d] > (hsize_t)IMAGE_MAX_ELEMENTS)
      return FAIL(PLM_ERR_IO, "%s: dataset %s: dimension %d is %llu: %s", f->path, f->name, d,
                  (unsigned long long)dims[d], dims[d] < 1 ? "no data" : "too long");
  f->rank = rank;
  f->count = rank == 3 ? (int64_t)dims[0] : 1;
  f->height = (int64_t)dims[rank - 2];
  f->width = (int64_t)dims[rank - 1];
  if (f->height > IMAGE_MAX_ELEMENTS / f->width)
    return FAIL(PLM_ERR_IO, "%s: dataset %s: %lldx%lld is more than %lld samples", f->path, f->name,
                (long long)f->height, (long long)f->width, (long long)IMAGE_MAX_ELEMENTS);
  *ndim = rank;
  return PLM_OK;
}

/* Refuse data in other files and filters this libhdf5 lacks; size the chunk cache of a
 * chunked dataset to one frame's chunks. *cache_bytes is 0 for a dataset that is not
 * chunked. */
static plm_status check_storage(hdf5_frames *f, size_t *cache_bytes, size_t *cache_slots, char *err,
                                size_t err_size) {
  char why[WHY_SIZE];
  *cache_bytes = 0;
  const hid_t dcpl = H5Dget_create_plist(f->dataset);
  if (dcpl < 0)
    return FAIL(PLM_ERR_IO, "%s: dataset %s: its properties: %s", f->path, f->name, hdf5_why(why));
  plm_status status = PLM_OK;
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout == H5D_VIRTUAL || H5Pget_external_count(dcpl) > 0)
    status =
        FAIL(PLM_ERR_UNSUPPORTED, "%s: dataset %s: its data lies in other files (%s): not read",
             f->path, f->name, layout == H5D_VIRTUAL ? "a virtual dataset" : "external storage");
  const int filters = status == PLM_OK ? H5Pget_nfilters(dcpl) : 0;
  for (int i = 0; i < filters && status == PLM_OK; i++) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    char name[64] = "";
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, (unsigned)i, &flags, &values, NULL, sizeof name, name, &config);
    if (id < 0 || H5Zfilter_avail(id) <= 0)
      status = FAIL(PLM_ERR_UNSUPPORTED,
                    "%s: dataset %s: filter %d ('%s') is not one this libhdf5 decodes", f->path,
                    f->name, (int)id, name);
  }
  hsize_t chunk[H5S_MAX_RANK] = {0};
  if (status == PLM_OK && layout == H5D_CHUNKED && H5Pget_chunk(dcpl, f->rank, chunk) == f->rank) {
    const hid_t type = H5Dget_type(f->dataset);
    const size_t element = type >= 0 ? H5Tget_size(type) : 1;
    if (type >= 0) H5Tclose(type);
    size_t chunk_bytes = element;
    for (int d = 0; d < f->rank; d++) chunk_bytes *= chunk[d] ? (size_t)chunk[d] : 1;
    const size_t across = (size_t)((f->height + (int64_t)chunk[f->rank - 2] - 1) /
                                   (int64_t)(chunk[f->rank - 2] ? chunk[f->rank - 2] : 1)) *
                          (size_t)((f->width + (int64_t)chunk[f->rank - 1] - 1) /
                                   (int64_t)(chunk[f->rank - 1] ? chunk[f->rank - 1] : 1));
    size_t bytes = CHUNK_CACHE_MOST;
    if (chunk_bytes && across <= CHUNK_CACHE_MOST / chunk_bytes) bytes = across * chunk_bytes;
    if (bytes < CHUNK_CACHE_LEAST) bytes = CHUNK_CACHE_LEAST;
    const size_t fitting = chunk_bytes ? bytes / chunk_bytes + 1 : 1;
    *cache_bytes = bytes;
    *cache_slots = (fitting < 10000 ? fitting * 100 : 1000000) | 1;
  }
  H5Pclose(dcpl);
  H5Eclear2(H5E_DEFAULT);
  return status;
}

/* One numeric attribute of the dataset into values[0..*count), at most most of them: *count
 * is 0 when there is no such attribute. */
static plm_status read_attribute(hdf5_frames *f, const char *name, double *values, int most,
                                 int *count, char *err, size_t err_size) {
  char why[WHY_SIZE];
  *count = 0;
  const htri_t exists = H5Aexists(f->dataset, name);
  if (exists < 0)
    return FAIL(PLM_ERR_IO, "%s: dataset %s: attribute %s: %s", f->path, f->name, name,
                hdf5_why(why));
  if (exists == 0) return PLM_OK;
  /* Each call's failure is told at once: the next call clears libhdf5's error stack. */
  hid_t type = H5I_INVALID_HID, space = H5I_INVALID_HID;
  hssize_t points = -1;
  H5T_class_t type_class = H5T_NO_CLASS;
  const hid_t a = H5Aopen(f->dataset, name, H5P_DEFAULT);
  bool failed = a < 0 || (type = H5Aget_type(a)) < 0 || (space = H5Aget_space(a)) < 0 ||
                (type_class = H5Tget_class(type)) == H5T_NO_CLASS ||
                (points = H5Sget_simple_extent_npoints(space)) < 0;
  plm_status status = PLM_OK;
  if (failed)
    status =
        FAIL(PLM_ERR_IO, "%s: dataset %s: attribute %s: %s", f->path, f->name, name, hdf5_why(why));
  else if (!numeric(type_class))
    status = FAIL(PLM_ERR_IO, "%s: dataset %s: attribute %s holds %s, not a number", f->path,
                  f->name, name, class_name(type_class));
  else if (points < 1 || points > most)
    status = FAIL(PLM_ERR_IO, "%s: dataset %s: attribute %s holds %lld values (1%s expected)",
                  f->path, f->name, name, (long long)points, most > 1 ? " to 16" : "");
  /* Converted bit by bit otherwise, as the datasets' elements would be (standard_layout). */
  else if (!standard_layout(type))
    status = FAIL(PLM_ERR_IO,
                  "%s: dataset %s: attribute %s: a number of a layout other than the standard "
                  "ones",
                  f->path, f->name, name);
  else if (H5Aread(a, H5T_NATIVE_DOUBLE, values) < 0)
    status =
        FAIL(PLM_ERR_IO, "%s: dataset %s: attribute %s: %s", f->path, f->name, name, hdf5_why(why));
  if (status == PLM_OK) *count = (int)points;
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (a >= 0) H5Aclose(a);
  H5Eclear2(H5E_DEFAULT);
  return status;
}

/* The CF attributes (support/hdf5_io.h): any of them makes the frames physical f32. */
static plm_status read_cf_attributes(hdf5_frames *f, char *err, size_t err_size) {
  int scales = 0, offsets = 0, fills = 0, missing = 0;
  f->scale = 1.0;
  f->offset = 0.0;
  plm_status status = read_attribute(f, "scale_factor", &f->scale, 1, &scales, err, err_size);
  if (status == PLM_OK)
    status = read_attribute(f, "add_offset", &f->offset, 1, &offsets, err, err_size);
  if (status == PLM_OK) status = read_attribute(f, "_FillValue", f->fill, 1, &fills, err, err_size);
  if (status == PLM_OK)
    status = read_attribute(f, "missing_value", f->fill + fills, MOST_FILLS - 1, &missing, err,
                            err_size);
  if (status != PLM_OK) return status;
  f->fill_count = fills + missing;
  f->physical = scales || offsets || f->fill_count;
  if (f->physical) f->dtype = PLM_DTYPE_F32;
  return PLM_OK;
}

/* ---- opening --------------------------------------------------------------------------- */

/* Refuse a superblock of version 0 or 1 that gives a driver information block: only the
 * family and multi drivers write one (plume reads single files), and libhdf5 1.10.8 allocates,
 * and fills, what a damaged block's length says before it checks it: fuzz_hdf5 made a 15 KB
 * file for which it took 2.8 GB (seed driver-info-huge-alloc). Later versions keep no such
 * block in the superblock. */
static plm_status check_superblock(hdf5_frames *f, char *err, size_t err_size) {
  unsigned char sb[64];
  ssize_t got;
  do got = pread(f->fd, sb, sizeof sb, 0);
  while (got < 0 && errno == EINTR);
  if (got < 0) return FAIL(PLM_ERR_IO, "%s: %s", f->path, strerror(errno));
  const unsigned version = got > 8 ? sb[8] : 99, address_size = got > 13 ? sb[13] : 0;
  if (version > 1 || address_size < 1 || address_size > 8) return PLM_OK; /* libhdf5 decides */
  /* Version 0: 24 bytes, version 1: 28, then the base, free-space, end-of-file and driver
   * information block addresses; an undefined address is all ones. */
  const size_t at = (version == 0 ? 24 : 28) + 3 * (size_t)address_size;
  if ((size_t)got < at + address_size) return PLM_OK;
  for (size_t i = 0; i < address_size; i++)
    if (sb[at + i] != 0xff)
      return FAIL(PLM_ERR_UNSUPPORTED,
                  "%s: its superblock gives a driver information block (a file of the family "
                  "or multi drivers, or a damaged one): not read",
                  f->path);
  return PLM_OK;
}

/* The file on descriptor f->fd, by a name libhdf5 opens again; its size now. */
static plm_status open_file(hdf5_frames *f, char *err, size_t err_size) {
  char why[WHY_SIZE], name[64];
  struct stat st;
  if (fstat(f->fd, &st) != 0) return FAIL(PLM_ERR_IO, "%s: %s", f->path, strerror(errno));
  f->size = st.st_size;
  const plm_status superblock = check_superblock(f, err, err_size);
  if (superblock != PLM_OK) return superblock;
  snprintf(name, sizeof name, "/proc/self/fd/%d", f->fd);
  /* Every libhdf5 call clears the error stack first: its account is taken at once. */
  const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
  if (access < 0) return FAIL(PLM_ERR_IO, "%s: libhdf5: %s", f->path, hdf5_why(why));
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(access, false, true);
#endif
  f->file = H5Fopen(name, H5F_ACC_RDONLY, access);
  plm_status status = PLM_OK;
  if (f->file < 0)
    status = FAIL(PLM_ERR_IO, "%s: not an HDF5 file libhdf5 reads: %s", f->path, hdf5_why(why));
  H5Pclose(access);
  return status;
}

static plm_status open_dataset(hdf5_frames *f, bool stored_values, int *ndim, char *err,
                               size_t err_size) {
  char why[WHY_SIZE];
  f->dataset = H5Dopen2(f->file, f->name, H5P_DEFAULT);
  if (f->dataset < 0)
    return FAIL(PLM_ERR_IO, "%s: dataset %s: %s", f->path, f->name, hdf5_why(why));
  plm_status status = choose_dtype(f, err, err_size);
  if (status == PLM_OK) status = choose_shape(f, ndim, err, err_size);
  size_t cache_bytes = 0, cache_slots = 0;
  if (status == PLM_OK) status = check_storage(f, &cache_bytes, &cache_slots, err, err_size);
  if (status == PLM_OK && !stored_values) status = read_cf_attributes(f, err, err_size);
  if (status != PLM_OK || cache_bytes == 0) return status;
  /* Open it again with a chunk cache that holds a frame's chunks: a chunk shared by several
   * frames (or bands) is then decompressed once per frame, not once per band. */
  const hid_t access = H5Pcreate(H5P_DATASET_ACCESS);
  if (access >= 0 && H5Pset_chunk_cache(access, cache_slots, cache_bytes, 1.0) >= 0) {
    const hid_t cached = H5Dopen2(f->file, f->name, access);
    if (cached >= 0) {
      H5Dclose(f->dataset);
      f->dataset = cached;
    }
  }
  if (access >= 0) H5Pclose(access);
  H5Eclear2(H5E_DEFAULT);
  return PLM_OK;
}

plm_status hdf5_frames_open(int fd, const char *path, const char *dataset, bool stored_values,
                            plm_dtype *dtype, int *ndim, int64_t *height, int64_t *width,
                            int64_t *count, hdf5_frames **out, char *err, size_t err_size) {
  *out = NULL;
  hdf5_frames *f = calloc(1, sizeof *f);
  if (f) {
    f->file = f->dataset = f->space = H5I_INVALID_HID;
    f->fd = fd;
    f->path = strdup(path);
  }
  if (!f || !f->path) {
    if (!f) close(fd);
    hdf5_frames_close(f);
    return FAIL(PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  quiet q;
  quiet_begin(&q);
  plm_status status = open_file(f, err, err_size);
  if (status == PLM_OK) status = choose_dataset(f, dataset, err, err_size);
  if (status == PLM_OK) status = open_dataset(f, stored_values, ndim, err, err_size);
  quiet_end(&q);
  if (status == PLM_OK) {
    f->band_rows = f->width >= BAND_SAMPLES ? 1 : BAND_SAMPLES / f->width;
    if (f->band_rows > f->height) f->band_rows = f->height;
    f->band = malloc((size_t)(f->band_rows * f->width) * sizeof *f->band);
    if (!f->band) status = FAIL(PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  if (status != PLM_OK) {
    hdf5_frames_close(f);
    return status;
  }
  *dtype = f->dtype;
  *height = f->height;
  *width = f->width;
  *count = f->count;
  *out = f;
  return PLM_OK;
}

/* ---- reading --------------------------------------------------------------------------- */

static float narrow(double v) {
  if (v > FLT_MAX && !isinf(v)) return INFINITY;
  if (v < -FLT_MAX && !isinf(v)) return -INFINITY;
  return (float)v;
}

static bool is_fill(const hdf5_frames *f, double v) {
  for (int i = 0; i < f->fill_count; i++)
    if (v == f->fill[i]) return true;
  return false;
}

/* v within 0..most (NaN as 0): an unsigned element's value as libhdf5 gave it, always in
 * range for a sound file; a damaged datatype (fuzz_hdf5 found one) can give others. */
static double unsigned_range(double v, double most) {
  return v >= 0.0 ? (v <= most ? v : most) : 0.0;
}

/* n samples of f->band into dst from sample `at` on, in the frames' dtype and values. */
static void convert_band(const hdf5_frames *f, void *dst, size_t at, size_t n) {
  const double *in = f->band;
  switch (f->dtype) {
    case PLM_DTYPE_U8:
      for (size_t i = 0; i < n; i++)
        ((uint8_t *)dst)[at + i] = (uint8_t)unsigned_range(in[i], UINT8_MAX);
      return;
    case PLM_DTYPE_U16:
      for (size_t i = 0; i < n; i++)
        ((uint16_t *)dst)[at + i] = (uint16_t)unsigned_range(in[i], UINT16_MAX);
      return;
    default: break;
  }
  float *out = (float *)dst + at;
  if (!f->physical) {
    for (size_t i = 0; i < n; i++) out[i] = narrow(in[i]);
    return;
  }
  for (size_t i = 0; i < n; i++)
    out[i] = is_fill(f, in[i]) ? NAN : narrow(in[i] * f->scale + f->offset);
}

plm_status hdf5_frames_read(hdf5_frames *f, int64_t k, void *dst, char *err, size_t err_size) {
  if (k < 0 || k >= f->count)
    return FAIL(PLM_ERR_INVALID_ARG, "%s: frame %lld is not in 0..%lld", f->path, (long long)k,
                (long long)(f->count - 1));
  /* libhdf5 reads zeros past the end of a file cut short since it was opened: refused. */
  struct stat st;
  if (fstat(f->fd, &st) != 0 || st.st_size < f->size)
    return FAIL(PLM_ERR_IO, "%s: dataset %s: frame %lld: the file shrank since it was opened",
                f->path, f->name, (long long)k);
  char why[WHY_SIZE];
  quiet q;
  quiet_begin(&q);
  plm_status status = PLM_OK;
  for (int64_t row = 0; row < f->height && status == PLM_OK; row += f->band_rows) {
    const int64_t rows = f->height - row < f->band_rows ? f->height - row : f->band_rows;
    const hsize_t start[3] = {(hsize_t)k, (hsize_t)row, 0};
    const hsize_t count[3] = {1, (hsize_t)rows, (hsize_t)f->width};
    const int skip = f->rank == 3 ? 0 : 1; /* a 2-D dataset has no frame axis */
    const hsize_t samples = (hsize_t)(rows * f->width);
    const hid_t memory = H5Screate_simple(1, &samples, NULL);
    if (memory < 0 ||
        H5Sselect_hyperslab(f->space, H5S_SELECT_SET, start + skip, NULL, count + skip, NULL) < 0 ||
        H5Dread(f->dataset, H5T_NATIVE_DOUBLE, memory, f->space, H5P_DEFAULT, f->band) < 0)
      status = FAIL(PLM_ERR_IO, "%s: dataset %s: frame %lld: %s", f->path, f->name, (long long)k,
                    hdf5_why(why));
    if (memory >= 0) H5Sclose(memory);
    if (status == PLM_OK) convert_band(f, dst, (size_t)(row * f->width), (size_t)samples);
  }
  quiet_end(&q);
  return status;
}

/* ---- writing --------------------------------------------------------------------------- */

/* The little-endian file type of a dtype's elements, and the native one they are in memory. */
static bool hdf5_types_of(plm_dtype dtype, hid_t *file_type, hid_t *memory_type) {
  switch (dtype) {
    case PLM_DTYPE_U8: *file_type = H5T_STD_U8LE, *memory_type = H5T_NATIVE_UINT8; return true;
    case PLM_DTYPE_U16: *file_type = H5T_STD_U16LE, *memory_type = H5T_NATIVE_UINT16; return true;
    case PLM_DTYPE_I32: *file_type = H5T_STD_I32LE, *memory_type = H5T_NATIVE_INT32; return true;
    case PLM_DTYPE_F32: *file_type = H5T_IEEE_F32LE, *memory_type = H5T_NATIVE_FLOAT; return true;
    case PLM_DTYPE_F64: *file_type = H5T_IEEE_F64LE, *memory_type = H5T_NATIVE_DOUBLE; return true;
  }
  return false;
}

/* The full name of the dataset to write: dataset (NULL: HDF5_DEFAULT_DATASET) from the root
 * group, '/' first, runs of '/' as one and none at the end ("a//b/" is "/a/b"). NULL when out
 * of memory. */
static char *full_name(const char *dataset) {
  if (!dataset) dataset = HDF5_DEFAULT_DATASET;
  char *name = malloc(strlen(dataset) + 2);
  if (!name) return NULL;
  size_t n = 0;
  name[n++] = '/';
  for (const char *c = dataset; *c; c++)
    if (*c != '/' || name[n - 1] != '/') name[n++] = *c;
  if (n > 1 && name[n - 1] == '/') n--;
  name[n] = '\0';
  return name;
}

/* One file being encoded: every libhdf5 handle it holds, closed by encoder_close. */
typedef struct encoder {
  hid_t access, creation, group_creation, dataset_creation, file, space, dataset;
} encoder;

static void encoder_close(encoder *e) {
  if (e->dataset >= 0) H5Dclose(e->dataset);
  if (e->space >= 0) H5Sclose(e->space);
  if (e->file >= 0) H5Fclose(e->file);
  if (e->dataset_creation >= 0) H5Pclose(e->dataset_creation);
  if (e->group_creation >= 0) H5Pclose(e->group_creation);
  if (e->creation >= 0) H5Pclose(e->creation);
  if (e->access >= 0) H5Pclose(e->access);
  H5Eclear2(H5E_DEFAULT);
}

/* A file in memory (the core driver without a backing store), in the earliest format that
 * holds it and never one newer than libhdf5 1.8 reads, that records no times: the root
 * group (the file creation list is a group's), the groups and the dataset are created with
 * H5Pset_obj_track_times off, so that the same array gives the same bytes. Its name only
 * tells libhdf5's open files apart: under /dev/null, where no file can be, so that libhdf5's
 * look for one of that name (before it creates the file) never finds one. */
static plm_status encoder_open(encoder *e, const char *path, char *err, size_t err_size) {
  static atomic_uint made; /* files encoded at once by several threads have their own names */
  char why[WHY_SIZE], name[64];
  snprintf(name, sizeof name, "/dev/null/plume-hdf5-encode-%u", atomic_fetch_add(&made, 1));
  if ((e->access = H5Pcreate(H5P_FILE_ACCESS)) < 0 ||
      H5Pset_fapl_core(e->access, (size_t)1 << 20, false) < 0 ||
      H5Pset_libver_bounds(e->access, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18) < 0 ||
      (e->creation = H5Pcreate(H5P_FILE_CREATE)) < 0 ||
      H5Pset_obj_track_times(e->creation, false) < 0 ||
      (e->group_creation = H5Pcreate(H5P_GROUP_CREATE)) < 0 ||
      H5Pset_obj_track_times(e->group_creation, false) < 0 ||
      (e->dataset_creation = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
      H5Pset_obj_track_times(e->dataset_creation, false) < 0 ||
      H5Pset_layout(e->dataset_creation, H5D_CONTIGUOUS) < 0)
    return FAIL(PLM_ERR_IO, "%s: libhdf5's properties: %s", path, hdf5_why(why));
  if ((e->file = H5Fcreate(name, H5F_ACC_TRUNC, e->creation, e->access)) < 0)
    return FAIL(PLM_ERR_IO, "%s: libhdf5 cannot make a file in memory: %s", path, hdf5_why(why));
  return PLM_OK;
}

/* The groups that lead to name ("/a/b/data": /a, /a/b), made without times. */
static plm_status make_groups(encoder *e, char *name, const char *path, char *err,
                              size_t err_size) {
  char why[WHY_SIZE];
  for (char *slash = strchr(name + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    const hid_t group = H5Gcreate2(e->file, name, H5P_DEFAULT, e->group_creation, H5P_DEFAULT);
    plm_status status = PLM_OK;
    if (group < 0)
      status = FAIL(PLM_ERR_IO, "%s: group %s: %s", path, name, hdf5_why(why));
    else
      H5Gclose(group);
    *slash = '/';
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}

/* The file's bytes as they would be on disk: its metadata flushed from libhdf5's cache first
 * (H5Fget_file_image copies the driver's memory only). */
static plm_status file_image(encoder *e, void **bytes, size_t *length, const char *path, char *err,
                             size_t err_size) {
  char why[WHY_SIZE];
  if (H5Fflush(e->file, H5F_SCOPE_GLOBAL) < 0)
    return FAIL(PLM_ERR_IO, "%s: flushing the file: %s", path, hdf5_why(why));
  const ssize_t size = H5Fget_file_image(e->file, NULL, 0);
  if (size <= 0) return FAIL(PLM_ERR_IO, "%s: the file's bytes: %s", path, hdf5_why(why));
  void *copy = malloc((size_t)size);
  if (!copy) return FAIL(PLM_ERR_OUT_OF_MEMORY, "%s: no memory for the file", path);
  if (H5Fget_file_image(e->file, copy, (size_t)size) != size) {
    free(copy);
    return FAIL(PLM_ERR_IO, "%s: the file's bytes: %s", path, hdf5_why(why));
  }
  *bytes = copy;
  *length = (size_t)size;
  return PLM_OK;
}

plm_status hdf5_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                       const char *dataset, void **bytes, size_t *length, const char *path,
                       char *err, size_t err_size) {
  *bytes = NULL;
  *length = 0;
  hid_t file_type, memory_type;
  if (!hdf5_types_of(dtype, &file_type, &memory_type))
    return FAIL(PLM_ERR_INVALID_ARG, "%s: dtype %d has no HDF5 type here", path, (int)dtype);
  if (ndim < 1 || ndim > 4)
    return FAIL(PLM_ERR_INVALID_ARG, "%s: %d dimensions (a dataset here has 1 to 4)", path, ndim);
  hsize_t shape[4];
  for (int d = 0; d < ndim; d++) {
    if (dims[d] < 1)
      return FAIL(PLM_ERR_INVALID_ARG, "%s: dimension %d is %lld", path, d, (long long)dims[d]);
    shape[d] = (hsize_t)dims[d];
  }
  char *name = full_name(dataset);
  if (!name) return FAIL(PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  if (strcmp(name, "/") == 0) {
    free(name);
    return FAIL(PLM_ERR_INVALID_ARG, "%s: '/' is the root group: name a dataset in it (%s:/data)",
                path, path);
  }
  char why[WHY_SIZE];
  quiet q;
  quiet_begin(&q);
  encoder e = {.access = H5I_INVALID_HID,
               .creation = H5I_INVALID_HID,
               .group_creation = H5I_INVALID_HID,
               .dataset_creation = H5I_INVALID_HID,
               .file = H5I_INVALID_HID,
               .space = H5I_INVALID_HID,
               .dataset = H5I_INVALID_HID};
  plm_status status = encoder_open(&e, path, err, err_size);
  if (status == PLM_OK) status = make_groups(&e, name, path, err, err_size);
  if (status == PLM_OK &&
      ((e.space = H5Screate_simple(ndim, shape, NULL)) < 0 ||
       (e.dataset = H5Dcreate2(e.file, name, file_type, e.space, H5P_DEFAULT, e.dataset_creation,
                               H5P_DEFAULT)) < 0 ||
       H5Dwrite(e.dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0))
    status = FAIL(PLM_ERR_IO, "%s: dataset %s: %s", path, name, hdf5_why(why));
  if (e.dataset >= 0) H5Dclose(e.dataset);
  e.dataset = H5I_INVALID_HID;
  if (status == PLM_OK) status = file_image(&e, bytes, length, path, err, err_size);
  encoder_close(&e);
  quiet_end(&q);
  free(name);
  return status;
}
