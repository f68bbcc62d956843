"""python/tests/test_properties.py: property-based tests of the Python module (hypothesis,
Debian's python3-hypothesis), against numpy references.

    PLUME_LIBRARY=build/libplume.so PYTHONPATH=python python3 python/tests/test_properties.py

(CTest runs it so: the test `python_properties`, which skips, saying so, when hypothesis is
not installed.) Generated: dtypes, shapes (1 to 3 dimensions, a 3-d one a stack run frame by
frame), strided views and offsets into larger arrays, threshold values and comparisons,
hostile parameter values (any text, any Python number), shapes of any Python values, and
the order in which a context, a pipeline, a stream and a tensor are closed. Each either
equals numpy's result or raises plume.Error; nothing else (no crash, no other exception, no
silently different pipeline).
"""
import gc
import sys
import unittest

import numpy as np

import plume

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:
    print("skipped: hypothesis is not installed (Debian: python3-hypothesis)")
    sys.exit(77)

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = [np.uint8, np.uint16, np.float32]
COMPARE = {"gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal}
CTX = plume.Context("host")


def arrays(dtype):
    """An array of dtype (1 to 3 dims), possibly a strided, offset view of a larger one."""
    elements = (st.floats(-1e6, 1e6, width=32) if dtype == np.float32 else
                st.integers(0, np.iinfo(dtype).max))
    base = hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9),
                      elements=elements)

    def view(array, data):
        slices = []
        for side in array.shape:
            start = data.draw(st.integers(0, side - 1))
            step = data.draw(st.integers(1, 3))
            slices.append(slice(start, None, step))
        return array[tuple(slices)]

    return st.tuples(base, st.data()).map(lambda pair: view(*pair))


class Producer:
    """Another library's CPU tensor: DLPack only (strided views included)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


class Properties(unittest.TestCase):
    @SETTINGS
    @given(st.sampled_from(DTYPES).flatmap(arrays),
           st.one_of(st.integers(-2**40, 2**40), st.floats(-1e7, 1e7)),
           st.sampled_from(sorted(COMPARE)))
    def test_threshold_equals_numpy_on_any_view(self, array, value, cmp):
        ours = plume.ops.threshold(array, value=value, cmp=cmp, context=CTX)
        expected = COMPARE[cmp](array.astype(np.float64), float(value)).astype(np.uint8)
        np.testing.assert_array_equal(ours, expected)
        try:
            taken = plume.ops.threshold(Producer(array), value=value, cmp=cmp, context=CTX)
        except plume.Error as error:
            self.assertFalse(array.flags.c_contiguous)
            self.assertIn("compact row-major", str(error))
        else:
            np.testing.assert_array_equal(taken, expected)

    @SETTINGS
    @given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1")),
                     st.integers(), st.floats(), st.booleans(), st.none(),
                     st.lists(st.integers(), max_size=3)))
    def test_any_parameter_value_runs_as_a_number_or_is_refused(self, value):
        frame = np.arange(12, dtype=np.uint16).reshape(3, 4)
        try:
            ours = plume.ops.threshold(frame, value=value, cmp="ge", context=CTX)
        except plume.Error as error:
            self.assertEqual(error.status, "PLM_ERR_INVALID_ARG")
            return
        self.assertIsInstance(value, (int, float))
        self.assertNotIsInstance(value, bool)
        expected = (frame.astype(np.float64) >= float(value)).astype(np.uint8)
        np.testing.assert_array_equal(ours, expected)  # one threshold, nothing else

    @SETTINGS
    @given(st.sampled_from(["window", "bins", "range"]),
           st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.text(max_size=8),
                     st.tuples(st.floats(), st.floats())))
    def test_entropy_parameters_run_or_are_refused(self, key, value):
        frame = np.arange(30, dtype=np.float32).reshape(5, 6)
        params = {"window": 3, "bins": 8, "range": (0.0, 30.0)}
        params[key] = value
        try:
            out = plume.ops.entropy(frame, context=CTX, **params)
        except plume.Error as error:
            self.assertEqual(error.status, "PLM_ERR_INVALID_ARG")
        else:
            self.assertEqual(out.shape, frame.shape)
            self.assertTrue(np.all(np.isfinite(out)))

    @SETTINGS
    @given(st.lists(st.one_of(st.integers(-2**80, 2**80), st.floats(), st.booleans(),
                              st.text(max_size=3)), min_size=0, max_size=5))
    def test_any_shape_is_taken_or_refused_by_name(self, shape):
        try:
            pl = plume.Pipeline("threshold value=1", "u16", shape, context=CTX)
        except plume.Error as error:
            self.assertEqual(error.status, "PLM_ERR_INVALID_ARG")
            self.assertTrue("shape" in str(error) or "dims" in str(error), str(error))
            return
        with pl:
            frame = np.ones(tuple(shape), np.uint16)
            np.testing.assert_array_equal(pl.run(frame), np.zeros(frame.shape, np.uint8))

    @SETTINGS
    @given(st.permutations(["context", "pipeline", "stream", "tensor"]),
           st.sampled_from(DTYPES))
    def test_any_close_order_leaves_results_or_errors(self, order, dtype):
        frame = (np.arange(20) % 7).astype(dtype).reshape(4, 5)
        ctx = plume.Context("host")
        live = {"context": ctx, "stream": ctx.stream()}
        live["pipeline"] = plume.Pipeline("threshold value=3", dtype, (4, 5), context=ctx)
        live["tensor"] = live["pipeline"].run(frame, stream=live["stream"], as_tensor=True)
        export = np.from_dlpack(live["tensor"])
        expected = (frame > 3).astype(np.uint8)
        for name in order:
            thing = live.pop(name)
            if name != "tensor":
                thing.close()
            del thing
            gc.collect()
            for other in live.values():
                if isinstance(other, plume.Tensor):
                    np.testing.assert_array_equal(other.numpy(), expected)
                    try:
                        np.testing.assert_array_equal(np.from_dlpack(other), expected)
                    except plume.Error as error:
                        self.assertIn("context is closed", str(error))
                elif isinstance(other, plume.Pipeline):
                    try:
                        np.testing.assert_array_equal(other.run(frame), expected)
                    except plume.Error as error:
                        self.assertEqual(error.status, "PLM_ERR_INVALID_STATE")
        np.testing.assert_array_equal(export, expected)  # held by the export


if __name__ == "__main__":
    unittest.main()
