"""plume._native: the C library through ctypes (include/plume/*.h), loaded once.

Where libplume is looked for, in order: the file PLUME_LIBRARY names; a libplume.so* next to
this package (what `cmake --install` and a wheel put there); the lib folder of the install
prefix this package was installed under (PREFIX/python/plume -> PREFIX/lib); the system's
search path (ctypes.util.find_library). libplume_io (plume._frames) is looked for in the
same places, after PLUME_IO_LIBRARY and the folder libplume was loaded from. The structs
below mirror the C headers field by field; tests/test_python.py checks them against the
library's own figures.
"""

import ctypes
import ctypes.util
import glob
import os

MAX_DIMS = 4


class Shape(ctypes.Structure):  # plm_shape (plume/ops.h)
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_DIMS)]


class Tensor(ctypes.Structure):  # plm_tensor (plume/tensor.h)
    _fields_ = [("ctx", ctypes.c_void_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("ndim", ctypes.c_int), ("dims", ctypes.c_int64 * MAX_DIMS),
                ("strides", ctypes.c_int64 * MAX_DIMS)]


class ContextConfig(ctypes.Structure):  # plm_context_config (plume/context.h)
    _fields_ = [("backend", ctypes.c_int), ("device", ctypes.c_int),
                ("default_pool", ctypes.c_void_p), ("host_upstream", ctypes.c_void_p),
                ("host_upstream_pinned", ctypes.c_int), ("host_threads", ctypes.c_int)]


class NamedTensor(ctypes.Structure):  # plm_named_tensor (plume/pipeline.h)
    _fields_ = [("name", ctypes.c_char_p), ("shape", Shape), ("host_data", ctypes.c_void_p)]


class PlanConfig(ctypes.Structure):  # plm_plan_config
    _fields_ = [("frames_in_flight", ctypes.c_int), ("max_streams", ctypes.c_int),
                ("flags", ctypes.c_uint), ("pool", ctypes.c_void_p)]


class RunStreamOptions(ctypes.Structure):  # plm_run_stream_options
    _fields_ = [("max_frames", ctypes.c_int64), ("use_graphs", ctypes.c_bool),
                ("record_timing", ctypes.c_bool), ("source_ahead", ctypes.c_int),
                ("batch", ctypes.c_int)]


class RunStreamReport(ctypes.Structure):  # plm_run_stream_report
    _fields_ = [("frames_delivered", ctypes.c_int64), ("failed_frame", ctypes.c_int64),
                ("seconds", ctypes.c_double), ("frames_per_s", ctypes.c_double),
                ("latency_p50_ms", ctypes.c_double), ("latency_p99_ms", ctypes.c_double),
                ("graph_replays", ctypes.c_int64), ("graphs_used", ctypes.c_bool),
                ("graphs_note", ctypes.c_char * 160), ("copy_ms", ctypes.c_double),
                ("compute_ms", ctypes.c_double), ("overlap_ms", ctypes.c_double),
                ("submit_p50_us", ctypes.c_double), ("submit_p99_us", ctypes.c_double),
                ("source_p50_us", ctypes.c_double), ("source_p99_us", ctypes.c_double)]


POOL_STATS_FIELDS = ("requests", "hits", "failures", "upstream_allocs", "upstream_frees",
                     "bytes_in_use", "bytes_requested", "bytes_reserved", "bytes_released",
                     "peak_bytes_in_use", "peak_bytes_reserved", "largest_free_block",
                     "fragmentation", "live_blocks", "cross_stream_reuses", "inserted_waits",
                     "host_synchronizations")


class PoolStats(ctypes.Structure):  # plm_pool_stats (plume/pool.h)
    _fields_ = [(name, ctypes.c_double if name == "fragmentation" else ctypes.c_uint64)
                for name in POOL_STATS_FIELDS]


class Preset(ctypes.Structure):  # plm_preset (plume/presets.h)
    _fields_ = [("name", ctypes.c_char_p), ("summary", ctypes.c_char_p),
                ("pipeline", ctypes.c_char_p), ("tensors", ctypes.c_char_p),
                ("settle_frames", ctypes.c_int)]


class OpInfo(ctypes.Structure):  # plm_op_info (plume/op_info.h)
    _fields_ = [("name", ctypes.c_char_p), ("summary", ctypes.c_char_p),
                ("input_count", ctypes.c_int), ("output_count", ctypes.c_int),
                ("param_count", ctypes.c_int), ("in_text", ctypes.c_bool),
                ("stateful", ctypes.c_bool), ("details", ctypes.c_char_p)]


class OpInputInfo(ctypes.Structure):  # plm_op_input_info
    _fields_ = [("name", ctypes.c_char_p), ("dtype_mask", ctypes.c_uint),
                ("dtypes", ctypes.c_char * 64), ("optional", ctypes.c_bool),
                ("by_name", ctypes.c_bool)]


class OpParamInfo(ctypes.Structure):  # plm_op_param_info
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_char_p),
                ("choices", ctypes.POINTER(ctypes.c_char_p)), ("form", ctypes.c_char_p),
                ("help", ctypes.c_char_p), ("required", ctypes.c_bool),
                ("required_for_float", ctypes.c_bool), ("default_text", ctypes.c_char * 64)]


# plm_dlpack_release_fn
RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# plm_frame_source_fn and plm_frame_sink_fn
SOURCE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_bool))
SINK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64,
                           ctypes.POINTER(ctypes.c_void_p))

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
I64P = ctypes.POINTER(ctypes.c_int64)

# name: (restype, argtypes); every plm_status function returns c_int.
SIGNATURES = {
    "plm_status_str": (ctypes.c_char_p, [ctypes.c_int]),
    "plm_last_error": (ctypes.c_char_p, []),
    "plm_version_string": (ctypes.c_char_p, []),
    "plm_region_column_name": (ctypes.c_char_p, [ctypes.c_int]),
    "plm_context_create": (ctypes.c_int, [ctypes.POINTER(ContextConfig), PP]),
    "plm_context_destroy": (ctypes.c_int, [P]),
    "plm_context_backend": (ctypes.c_int, [P, ctypes.POINTER(ctypes.c_int)]),
    "plm_context_default_pool": (ctypes.c_int, [P, PP]),
    "plm_pool_stats_get": (ctypes.c_int, [P, ctypes.POINTER(PoolStats)]),
    "plm_tuning_batch": (ctypes.c_int, [P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]),
    "plm_stream_create": (ctypes.c_int, [P, ctypes.c_uint, PP]),
    "plm_stream_wrap": (ctypes.c_int, [P, P, PP]),
    "plm_stream_native_handle": (ctypes.c_int, [P, PP]),
    "plm_stream_destroy": (ctypes.c_int, [P]),
    "plm_stream_synchronize": (ctypes.c_int, [P]),
    "plm_stream_memcpy": (ctypes.c_int, [P, P, P, ctypes.c_size_t, ctypes.c_int]),
    "plm_tensor_wrap": (ctypes.c_int, [P, P, ctypes.c_int, ctypes.c_int, I64P,
                                       ctypes.POINTER(Tensor)]),
    "plm_tensor_wrap_strided": (ctypes.c_int, [P, P, ctypes.c_int, ctypes.c_int, I64P, I64P,
                                               ctypes.POINTER(Tensor)]),
    "plm_tensor_alloc": (ctypes.c_int, [P, P, ctypes.c_int, ctypes.c_int, I64P,
                                        ctypes.POINTER(Tensor)]),
    "plm_tensor_free": (ctypes.c_int, [P, P, ctypes.POINTER(Tensor)]),
    "plm_tensor_from_dlpack": (ctypes.c_int, [P, P, ctypes.POINTER(Tensor),
                                              ctypes.POINTER(ctypes.c_bool)]),
    "plm_tensor_from_dlpack_legacy": (ctypes.c_int, [P, P, ctypes.POINTER(Tensor)]),
    "plm_tensor_to_dlpack": (ctypes.c_int, [ctypes.POINTER(Tensor), ctypes.c_uint64,
                                            RELEASE_FN, P, PP]),
    "plm_tensor_to_dlpack_legacy": (ctypes.c_int, [ctypes.POINTER(Tensor), RELEASE_FN, P, PP]),
    "plm_dlpack_release": (None, [P]),
    "plm_dlpack_release_legacy": (None, [P]),
    "plm_dlpack_order_before_native": (ctypes.c_int, [P, P]),
    "plm_dlpack_order_after_native": (ctypes.c_int, [P, P]),
    "plm_op_count": (ctypes.c_int, []),
    "plm_op_info_get": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(OpInfo)]),
    "plm_op_input_info_get": (ctypes.c_int, [ctypes.c_int, ctypes.c_int,
                                             ctypes.POINTER(OpInputInfo)]),
    "plm_op_param_info_get": (ctypes.c_int, [ctypes.c_int, ctypes.c_int,
                                             ctypes.POINTER(OpParamInfo)]),
    "plm_pipeline_parse_with_tensors": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_int,
                                                       ctypes.c_int, I64P,
                                                       ctypes.POINTER(NamedTensor),
                                                       ctypes.c_int, PP]),
    "plm_pipeline_compile": (ctypes.c_int, [P, ctypes.POINTER(PlanConfig)]),
    "plm_pipeline_destroy": (ctypes.c_int, [P]),
    "plm_pipeline_io_count": (ctypes.c_int, [P, ctypes.POINTER(ctypes.c_int),
                                             ctypes.POINTER(ctypes.c_int)]),
    "plm_pipeline_input_shape": (ctypes.c_int, [P, ctypes.c_int, ctypes.POINTER(Shape)]),
    "plm_pipeline_output_shape": (ctypes.c_int, [P, ctypes.c_int, ctypes.POINTER(Shape)]),
    "plm_pipeline_run": (ctypes.c_int, [P, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), P]),
    "plm_pipeline_run_stream": (ctypes.c_int, [P, SOURCE_FN, SINK_FN, P,
                                               ctypes.POINTER(RunStreamOptions),
                                               ctypes.POINTER(RunStreamReport)]),
    "plm_run_stream_options_default": (RunStreamOptions, []),
    "plm_pipeline_describe": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_size_t,
                                             ctypes.POINTER(ctypes.c_size_t)]),
    "plm_pipeline_reset_state": (ctypes.c_int, [P]),
    "plm_pipeline_presets": (ctypes.POINTER(Preset), [ctypes.POINTER(ctypes.c_int)]),
}


def candidates(name="plume"):
    """Where lib<name>.so is looked for without an environment variable: the package's
    folder, PREFIX/lib (multiarch too), the system's search path."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "lib%s.so*" % name)))
    prefix_lib = os.path.join(os.path.dirname(os.path.dirname(here)), "lib")
    found += sorted(glob.glob(os.path.join(prefix_lib, "lib%s.so*" % name)))
    found += sorted(glob.glob(os.path.join(prefix_lib, "*", "lib%s.so*" % name)))  # multiarch
    system = ctypes.util.find_library(name)
    if system:
        found.append(system)
    return found


def _candidates():
    named = os.environ.get("PLUME_LIBRARY")
    if named:
        return [os.path.abspath(named)]
    return candidates("plume")


_loaded_from = []


def loaded_from():
    """The path libplume was loaded from (None for a name the system's search resolved)."""
    path = _loaded_from[0] if _loaded_from else None
    return path if path and os.path.isabs(path) else None


def load():
    """The library, its functions declared; ImportError naming where it looked."""
    tried, reasons = _candidates(), []
    for path in tried:
        try:
            lib = ctypes.CDLL(path)
        except OSError as error:
            reasons.append(str(error))
            continue
        for name, (restype, argtypes) in SIGNATURES.items():
            if not hasattr(lib, name):
                continue  # plm_version_string is optional
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _loaded_from.append(path)
        return lib
    raise ImportError("plume: libplume not found (%s); set PLUME_LIBRARY to its path"
                      % ("; ".join(reasons) if reasons else "looked in PLUME_LIBRARY, the "
                         "package's folder, PREFIX/lib and the system's search path"))


lib = load()
