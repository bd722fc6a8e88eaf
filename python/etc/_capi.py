"""ctypes declarations of the etc runtime's C API (runtime/include/etc/runtime.h).

Loads libetcrt.so from, in order: $ETC_RUNTIME_LIB (a path to the library), the installed
layout (<prefix>/lib/python/etc/ -> <prefix>/lib/libetcrt.so), the system's library path.
"""
import ctypes
import ctypes.util
import os

MAX_SHAPE_RANK = 4

STATUS_NAMES = [
    "OK", "INVALID_ARGUMENT", "IO", "BAD_FATBIN", "BAD_DESCRIPTOR", "NO_DRIVER", "NO_DEVICE",
    "NO_CODE_FOR_DEVICE", "NOT_FOUND", "BAD_SYM", "BAD_SHAPE", "BAD_BINDING", "NOT_LOADED", "CUDA",
    "KERNEL", "INTERNAL",
]
DTYPES = ["f32", "f16", "bf16", "i32", "i64", "u8"]  # etc_dtype order
ROLES = ["input", "output", "param", "temp"]           # etc_role order
MODES = {"mega": 0, "unfused": 1, "unfused-graph": 2}  # etc_mode


class SymInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("lo", ctypes.c_int64), ("hi", ctypes.c_int64)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("role", ctypes.c_int),
                ("rank", ctypes.c_int), ("shape_text", ctypes.c_char_p * MAX_SHAPE_RANK)]


class LaunchOptions(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("watchdog_ns", ctypes.c_int64), ("flags", ctypes.c_uint)]


class ProfileRecord(ctypes.Structure):
    """etc/abi.h EtcProfileRecord (etcc --profile)."""
    _fields_ = [("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64), ("wait_ns", ctypes.c_uint32),
                ("sm", ctypes.c_uint32), ("cta", ctypes.c_uint32), ("task", ctypes.c_int32),
                ("coords", ctypes.c_int32 * MAX_SHAPE_RANK), ("ops_begin_ns", ctypes.c_uint32),
                ("ops_ns", ctypes.c_uint32)]


assert ctypes.sizeof(ProfileRecord) == 56


def _candidates():
    env = os.environ.get("ETC_RUNTIME_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "libetcrt.so")
    found = ctypes.util.find_library("etcrt")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("etc: cannot load the runtime library libetcrt.so; tried: " + "; ".join(tried or ["nothing"]) +
                      ". Set ETC_RUNTIME_LIB to its path.")


lib = _load()

_P = ctypes.c_void_p
_S = ctypes.c_int  # etc_status
_SIG = {
    "etc_last_error_message": (ctypes.c_char_p, []),
    "etc_status_name": (ctypes.c_char_p, [_S]),
    "etc_module_open_file": (_S, [ctypes.c_char_p, ctypes.POINTER(_P)]),
    "etc_module_open_memory": (_S, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(_P)]),
    "etc_module_destroy": (None, [_P]),
    "etc_module_name": (ctypes.c_char_p, [_P]),
    "etc_module_ir": (ctypes.c_char_p, [_P]),
    "etc_module_fatbin_targets": (ctypes.c_char_p, [_P]),
    "etc_module_num_syms": (ctypes.c_size_t, [_P]),
    "etc_module_sym_info": (_S, [_P, ctypes.c_size_t, ctypes.POINTER(SymInfo)]),
    "etc_module_num_tensors": (ctypes.c_size_t, [_P]),
    "etc_module_tensor_info": (_S, [_P, ctypes.c_size_t, ctypes.POINTER(TensorInfo)]),
    "etc_module_num_graphs": (ctypes.c_size_t, [_P]),
    "etc_module_graph_name": (ctypes.c_char_p, [_P, ctypes.c_size_t]),
    "etc_module_set_sym": (_S, [_P, ctypes.c_char_p, ctypes.c_int64]),
    "etc_module_get_sym": (_S, [_P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64)]),
    "etc_module_tensor_shape": (_S, [_P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                     ctypes.c_int64 * MAX_SHAPE_RANK]),
    "etc_module_workspace_bytes": (_S, [_P, ctypes.POINTER(ctypes.c_uint64)]),
    "etc_module_bind": (_S, [_P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                             ctypes.POINTER(ctypes.c_int64)]),
    "etc_module_unbind": (_S, [_P, ctypes.c_char_p]),
    "etc_module_load_device": (_S, [_P, ctypes.c_int]),
    "etc_module_device_info": (_S, [_P, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
                                    ctypes.POINTER(ctypes.c_int)]),
    "etc_module_launch": (_S, [_P, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(LaunchOptions)]),
    "etc_module_check_error": (_S, [_P, ctypes.c_void_p]),
    "etc_module_profile_capacity": (ctypes.c_int64, [_P]),
    "etc_module_read_profile": (_S, [_P, ctypes.c_void_p, ctypes.POINTER(ProfileRecord), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_size_t)]),
}
for _name, (_res, _args) in _SIG.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args
