"""The installed libuniflow.so loads into Python through ctypes and runs.

    python3 load_check.py PATH/TO/libuniflow.so.0

Tests/abi/run runs this with the Swift toolchain's folder hidden.
"""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.uf_version.restype = ctypes.c_char_p
lib.uf_dispatcher_new.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
lib.uf_dispatcher_new.restype = ctypes.c_int
lib.uf_dispatcher_free.argtypes = [ctypes.c_void_p]
lib.uf_dispatcher_free.restype = None

d = ctypes.c_void_p()
status = lib.uf_dispatcher_new(ctypes.byref(d), None)
if status != 0 or not d:
    sys.exit(f"uf_dispatcher_new returned {status}")
lib.uf_dispatcher_free(d)
print(f"libuniflow {lib.uf_version().decode()} loaded into Python through ctypes")
