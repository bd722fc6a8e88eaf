#!/usr/bin/env python3
"""The Python binding without a GPU: loading libetcrt, reading a fatbin's descriptor, syms,
shapes, and the checks made before anything reaches the device.

    ETC_RUNTIME_LIB=build/runtime/libetcrt.so PYTHONPATH=python \
        python3 python/tests/test_binding.py path/to/two_stage_sum.fatbin
"""
import os
import sys
import unittest
import weakref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import etc  # noqa: E402

FATBIN = None  # set from the command line


class FakeCudaArray:
    """Anything with __cuda_array_interface__ binds; the pointer is never touched without a launch."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=0x7F0000000000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


class FakeTorchTensor:
    """Duck-typed like torch.Tensor (data_ptr, is_cuda, ...) without PyTorch."""

    def __init__(self, is_cuda=True, contiguous=True, dtype="torch.float32", shape=(1,)):
        self.is_cuda = is_cuda
        self._contiguous = contiguous
        self.dtype = dtype
        self.shape = shape
        self.device = type("Device", (), {"index": 0})()

    def data_ptr(self):
        return 0x7F0000001000

    def is_contiguous(self):
        return self._contiguous


class BindingTest(unittest.TestCase):
    def setUp(self):
        self.m = etc.Module(FATBIN)

    def tearDown(self):
        self.m.close()

    def assertStatus(self, status, fn, *args, **kwargs):
        with self.assertRaises(etc.EtcError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.status, status, str(cm.exception))
        return str(cm.exception)

    def test_descriptor(self):
        self.assertEqual(self.m.name, "two_stage_sum")
        self.assertEqual(self.m.syms, {"N": (1, 100000000)})
        self.assertEqual(self.m.graphs, ["main"])
        self.assertIn("sm_", self.m.targets)
        self.assertIn("module @two_stage_sum", self.m.ir)
        t = {x.name: x for x in self.m.tensors}
        self.assertEqual((t["a"].dtype, t["a"].role, t["a"].shape_text), ("f32", "input", ("N",)))
        self.assertEqual((t["out"].role, t["out"].shape_text), ("output", ("1",)))
        self.assertEqual(t["p"].role, "temp")
        # Read once, handed out as a new list each time: changing one changes no other.
        first = self.m.tensors
        first.clear()
        self.assertEqual([x.name for x in self.m.tensors], list(t))

    def test_syms_and_shapes(self):
        self.assertStatus("BAD_SYM", self.m.get_sym, "N")
        self.m.set_syms(N=5000)
        self.assertEqual(self.m.get_sym("N"), 5000)
        self.assertEqual(self.m.tensor_shape("a"), (5000,))
        self.assertEqual(self.m.tensor_shape("out"), (1,))
        self.assertGreater(self.m.workspace_bytes(), 0)
        msg = self.assertStatus("BAD_SYM", self.m.set_syms, N=0)
        self.assertIn("N", msg)
        self.assertStatus("NOT_FOUND", self.m.set_syms, Q=1)
        self.assertStatus("NOT_FOUND", self.m.tensor_shape, "nope")
        with self.assertRaises(TypeError):
            self.m.set_syms(N=1.5)

    def test_bind_checks_dtype_and_shape(self):
        self.m.set_syms(N=10)
        self.m.bind(a=FakeCudaArray((10,)), out=FakeCudaArray((1,)))
        self.assertStatus("BAD_BINDING", self.m.bind, a=FakeCudaArray((11,)))
        self.assertStatus("BAD_BINDING", self.m.bind, a=FakeCudaArray((10,), typestr="<f2"))
        self.assertStatus("BAD_BINDING", self.m.bind, p=FakeCudaArray((1,)))  # a temp
        self.assertStatus("NOT_FOUND", self.m.bind, nope=FakeCudaArray((1,)))
        self.m.bind(a=FakeTorchTensor(shape=(10,)))
        self.m.bind_pointer("a", 0x7F0000002000, "f32", (10,))
        self.assertStatus("BAD_BINDING", self.m.bind_pointer, "a", 0x7F0000002000, "i32", (10,))
        with self.assertRaisesRegex(ValueError, "dtype 'f64'"):
            self.m.bind_pointer("a", 0x7F0000002000, "f64", (10,))

    def test_unbind_drops_the_modules_references(self):
        self.m.set_syms(N=10)
        a, out = FakeCudaArray((10,)), FakeCudaArray((1,))
        self.m.bind(a=a, out=out)
        ref_a, ref_out = weakref.ref(a), weakref.ref(out)
        del a, out
        self.assertIsNotNone(ref_a())  # the module keeps what it may launch on
        self.m.unbind("a")
        self.assertIsNone(ref_a())
        self.assertIsNotNone(ref_out())
        self.m.unbind()  # every input, output and param
        self.assertIsNone(ref_out())
        self.assertStatus("BAD_BINDING", self.m.unbind, "p")  # a temp
        self.assertStatus("NOT_FOUND", self.m.unbind, "nope")

    def test_bind_refuses_what_is_not_a_contiguous_cuda_tensor(self):
        self.m.set_syms(N=4)
        with self.assertRaisesRegex(TypeError, "neither a torch CUDA tensor"):
            self.m.bind(a=[1.0, 2.0, 3.0, 4.0])
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            self.m.bind(a=FakeCudaArray((2, 2), strides=(4, 8)))
        self.m.bind(out=FakeCudaArray((1,), strides=(4,)))
        with self.assertRaisesRegex(ValueError, "type string '<c8'"):
            self.m.bind(a=FakeCudaArray((4,), typestr="<c8"))
        with self.assertRaisesRegex(ValueError, "CPU tensor"):
            self.m.bind(a=FakeTorchTensor(is_cuda=False, shape=(4,)))
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            self.m.bind(a=FakeTorchTensor(contiguous=False, shape=(4,)))
        with self.assertRaisesRegex(ValueError, "dtype torch.complex64"):
            self.m.bind(a=FakeTorchTensor(dtype="torch.complex64", shape=(4,)))

    def test_launch_checks_mode_and_needs_a_device(self):
        with self.assertRaisesRegex(ValueError, "mode 'fast'"):
            self.m.launch(mode="fast")
        self.assertStatus("NOT_LOADED", self.m.check_error)
        try:
            self.m.load_device()
        except etc.EtcError as e:  # this machine has no GPU (or no driver): say so by status
            self.assertIn(e.status, ("NO_DRIVER", "NO_DEVICE"))
        else:
            self.skipTest("a GPU is present: the GPU example covers launches")

    def test_profile_needs_a_profiled_fatbin_and_a_device(self):
        self.assertEqual(self.m.profile_capacity, 0)  # compiled without --profile
        self.assertStatus("NOT_LOADED", self.m.read_profile)

    def test_open_errors(self):
        msg = self.assertStatus("IO", etc.Module, "/nonexistent/x.fatbin")
        self.assertIn("/nonexistent/x.fatbin", msg)
        self.assertStatus("BAD_FATBIN", etc.Module, __file__)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_binding.py FATBIN [unittest options]")
    FATBIN = sys.argv.pop(1)
    unittest.main()
