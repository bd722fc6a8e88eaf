"""Python binding of the etc runtime: ctypes over the C API of libetcrt.so, nothing to compile.

    import torch, etc
    m = etc.Module("mlp.fatbin")
    m.set_syms(B=8)
    y = torch.empty(m.tensor_shape("y"), dtype=torch.bfloat16, device="cuda")
    m.bind(x=x, ln=ln, w_gate_up=w_gate_up, w_down=w_down, y=y)
    m.launch()              # on torch's current stream, asynchronous like a torch op
    m.check_error()         # synchronises that stream; raises EtcError if the kernel reported one

Tensors are PyTorch CUDA tensors or any object with __cuda_array_interface__ (CuPy, Numba, ...),
contiguous, with the dtype and shape the module declares for the current syms. See
docs/runtime.md.
"""
import ctypes
import sys

from . import _capi
from ._capi import lib

__all__ = ["EtcError", "Module", "TensorInfo"]

_TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
                 "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8"}
# __cuda_array_interface__ type strings; bf16 has none.
_TYPESTRS = {"<f4": "f32", "<f2": "f16", "<i4": "i32", "<i8": "i64", "|u1": "u8", "<u1": "u8"}


class EtcError(RuntimeError):
    """A failed runtime call; `status` is the C API's status name without ETC_STATUS_ (e.g. "BAD_SYM")."""

    def __init__(self, status, message):
        super().__init__(f"{message} [{status}]")
        self.status = status


def _check(status):
    if status != 0:
        name = _capi.STATUS_NAMES[status] if 0 <= status < len(_capi.STATUS_NAMES) else str(status)
        raise EtcError(name, lib.etc_last_error_message().decode())


class TensorInfo:
    """A tensor of the module as declared: name, dtype ("bf16"...), role ("input"...), shape text."""

    def __init__(self, info):
        self.name = info.name.decode()
        self.dtype = _capi.DTYPES[info.dtype]
        self.role = _capi.ROLES[info.role]
        self.shape_text = tuple(info.shape_text[i].decode() for i in range(info.rank))

    def __repr__(self):
        return f"TensorInfo({self.name}: {self.dtype}[{', '.join(self.shape_text)}] {self.role})"


def _device_buffer(name, obj):
    """(pointer, dtype, shape, device index or None) of a CUDA tensor-like object."""
    if hasattr(obj, "data_ptr") and hasattr(obj, "is_cuda"):  # a torch.Tensor, without importing torch
        if not obj.is_cuda:
            raise ValueError(f"tensor {name}: a CPU tensor; move it to the GPU first (.cuda())")
        if not obj.is_contiguous():
            raise ValueError(f"tensor {name}: not contiguous; pass .contiguous()")
        dtype = _TORCH_DTYPES.get(str(obj.dtype))
        if dtype is None:
            raise ValueError(f"tensor {name}: dtype {obj.dtype} is not one etc has "
                             f"({', '.join(_TORCH_DTYPES)})")
        return obj.data_ptr(), dtype, tuple(obj.shape), obj.device.index
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError(f"tensor {name}: {type(obj).__name__} is neither a torch CUDA tensor nor an object "
                        "with __cuda_array_interface__")
    shape = tuple(int(d) for d in cai["shape"])
    dtype = _TYPESTRS.get(cai["typestr"])
    if dtype is None:
        raise ValueError(f"tensor {name}: type string {cai['typestr']!r} is not one etc has "
                         f"({', '.join(_TYPESTRS)})")
    strides = cai.get("strides")
    if strides is not None:
        size = int(cai["typestr"][2:])
        expected = []
        step = size
        for d in reversed(shape):
            expected.append(step)
            step *= d
        if tuple(strides) != tuple(reversed(expected)):
            raise ValueError(f"tensor {name}: not contiguous (strides {tuple(strides)})")
    return int(cai["data"][0]), dtype, shape, None


def _stream_handle(stream, device):
    """A CUstream as an integer: None means torch's current stream when torch is in use, else 0."""
    if stream is None:
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda.current_stream(device).cuda_stream
        return 0
    for attr in ("cuda_stream", "ptr", "handle"):  # torch.cuda.Stream, cupy.cuda.Stream, others
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


class Module:
    """An etc fatbin: its descriptor, syms and bindings, and launches on the GPU."""

    def __init__(self, path):
        handle = ctypes.c_void_p()
        _check(lib.etc_module_open_file(str(path).encode(), ctypes.byref(handle)))
        self._h = handle
        self._tensors = None  # the declared tensors, once read (they never change)
        self._bound = {}  # keeps bound tensors alive as long as the module may use their memory
        self._device = None
        self._loaded = False

    def close(self):
        if self._h:
            lib.etc_module_destroy(self._h)
            self._h = None
            self._bound.clear()

    def __del__(self):
        if getattr(self, "_h", None):  # a failed open leaves no handle
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the descriptor (no GPU needed) ------------------------------------------------------
    @property
    def name(self):
        return lib.etc_module_name(self._h).decode()

    @property
    def ir(self):
        """The module's canonical .etir text, as embedded in the fatbin."""
        return lib.etc_module_ir(self._h).decode()

    @property
    def targets(self):
        """What the fatbin holds, e.g. "sm_90a, sm_80, compute_90"."""
        return lib.etc_module_fatbin_targets(self._h).decode()

    @property
    def syms(self):
        """{name: (lo, hi)}, inclusive ranges."""
        out = {}
        for i in range(lib.etc_module_num_syms(self._h)):
            s = _capi.SymInfo()
            _check(lib.etc_module_sym_info(self._h, i, ctypes.byref(s)))
            out[s.name.decode()] = (s.lo, s.hi)
        return out

    @property
    def tensors(self):
        """The declared tensors (a new list each time). Read from the module once: a decode model
        declares hundreds, and each is a few C calls."""
        if self._tensors is None:
            infos = []
            for i in range(lib.etc_module_num_tensors(self._h)):
                t = _capi.TensorInfo()
                _check(lib.etc_module_tensor_info(self._h, i, ctypes.byref(t)))
                infos.append(TensorInfo(t))
            self._tensors = tuple(infos)
        return list(self._tensors)

    @property
    def graphs(self):
        return [lib.etc_module_graph_name(self._h, i).decode() for i in range(lib.etc_module_num_graphs(self._h))]

    # ---- syms and shapes ----------------------------------------------------------------------
    def set_syms(self, **values):
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"sym {name}: an int, not {type(value).__name__}")
            _check(lib.etc_module_set_sym(self._h, name.encode(), value))

    def get_sym(self, name):
        v = ctypes.c_int64()
        _check(lib.etc_module_get_sym(self._h, name.encode(), ctypes.byref(v)))
        return v.value

    def tensor_shape(self, name):
        """The tensor's extents for the current syms, as a tuple."""
        rank = ctypes.c_int()
        shape = (ctypes.c_int64 * _capi.MAX_SHAPE_RANK)()
        _check(lib.etc_module_tensor_shape(self._h, name.encode(), ctypes.byref(rank), shape))
        return tuple(shape[i] for i in range(rank.value))

    def workspace_bytes(self):
        v = ctypes.c_uint64()
        _check(lib.etc_module_workspace_bytes(self._h, ctypes.byref(v)))
        return v.value

    # ---- bindings -------------------------------------------------------------------------------
    def bind(self, **tensors):
        """Binds inputs, outputs and params by name; dtype and shape are checked here and at launch."""
        for name, obj in tensors.items():
            ptr, dtype, shape, device = _device_buffer(name, obj)
            if device is not None:
                if self._device is not None and device != self._device:
                    raise ValueError(f"tensor {name} is on cuda:{device}, the module on cuda:{self._device}")
                self._device = device
            self.bind_pointer(name, ptr, dtype, shape)
            self._bound[name] = obj

    def bind_pointer(self, name, ptr, dtype, shape):
        """Binds a raw device pointer (an int, a CUdeviceptr in the module's device's primary
        context) holding a C-contiguous `dtype` ("f32", "bf16", ...) array of `shape`. The caller
        keeps the memory alive."""
        if dtype not in _capi.DTYPES:
            raise ValueError(f"tensor {name}: dtype {dtype!r} is not one of {', '.join(_capi.DTYPES)}")
        shape = tuple(int(d) for d in shape)
        dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        _check(lib.etc_module_bind(self._h, name.encode(), int(ptr), _capi.DTYPES.index(dtype), len(shape), dims))
        self._bound.pop(name, None)

    def unbind(self, *names):
        """Forgets the bindings of `names` (default: every input, output and param) and drops
        the module's references to them, so that their memory can be freed; a launch fails until
        they are bound again."""
        for name in names or [t.name for t in self.tensors if t.role != "temp"]:
            _check(lib.etc_module_unbind(self._h, name.encode()))
            self._bound.pop(name, None)

    # ---- the device ---------------------------------------------------------------------------
    def load_device(self, device=None):
        """Loads the fatbin on a GPU (default: the bound tensors' GPU, else 0). launch() does it when needed."""
        if device is not None:
            self._device = int(device)
        if self._device is None:
            self._device = 0
        _check(lib.etc_module_load_device(self._h, self._device))
        self._loaded = True

    @property
    def device_info(self):
        """(name, (major, minor)) of the GPU the module is loaded on."""
        name = ctypes.c_char_p()
        major, minor = ctypes.c_int(), ctypes.c_int()
        _check(lib.etc_module_device_info(self._h, ctypes.byref(name), ctypes.byref(major), ctypes.byref(minor)))
        return name.value.decode(), (major.value, minor.value)

    def launch(self, graph=None, stream=None, mode="mega", watchdog_ns=0, debug=False):
        """Launches a graph (default: the only one), asynchronously on `stream` (default: torch's
        current stream if torch is in use, else the legacy default stream)."""
        if mode not in _capi.MODES:
            raise ValueError(f"mode {mode!r}: one of {', '.join(_capi.MODES)}")
        if not self._loaded:
            self.load_device()
        opts = _capi.LaunchOptions(_capi.MODES[mode], int(watchdog_ns), 1 if debug else 0)
        g = graph.encode() if graph is not None else None
        _check(lib.etc_module_launch(self._h, g, _stream_handle(stream, self._device), ctypes.byref(opts)))

    @property
    def profile_capacity(self):
        """Task records one megakernel launch can hold; 0 unless compiled with etcc --profile."""
        return lib.etc_module_profile_capacity(self._h)

    def read_profile(self, stream=None):
        """The last megakernel launch's task records (synchronises the stream), as dicts with
        start_ns, end_ns, wait_ns, sm, cta, task (index into the descriptor's tasks), coords, ops_begin_ns
        and ops_ns (when its ops began, relative to start_ns, and how long they took)."""
        cap = self.profile_capacity
        records = (_capi.ProfileRecord * max(1, cap))()
        written = ctypes.c_size_t()
        _check(lib.etc_module_read_profile(self._h, _stream_handle(stream, self._device), records, cap,
                                           ctypes.byref(written)))
        return [{"start_ns": r.start_ns, "end_ns": r.end_ns, "wait_ns": r.wait_ns, "sm": r.sm, "cta": r.cta,
                 "task": r.task, "coords": tuple(r.coords), "ops_begin_ns": r.ops_begin_ns, "ops_ns": r.ops_ns}
                for r in records[:min(written.value, cap)]]

    def check_error(self, stream=None):
        """Synchronises the stream and raises EtcError if the last launch's kernel reported an error."""
        _check(lib.etc_module_check_error(self._h, _stream_handle(stream, self._device)))
