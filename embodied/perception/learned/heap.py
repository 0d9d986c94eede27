"""Keep the per-frame arrays' memory mapped between frames (glibc only).

A 128 px frame makes a few MB of short-lived arrays (the network's full-resolution
maps, the region graph's per-pixel table). With glibc's default thresholds many
of them are mapped fresh from the kernel and returned at once, and touching
their pages again costs more than the arithmetic: about 800 page faults, 2 ms a
frame on these machines. Raising the thresholds lets freed memory be reused.

    keep_freed_memory()   # idempotent; a no-op where the C library is not glibc
"""

from __future__ import annotations

import ctypes
import ctypes.util

MMAP_THRESHOLD = 4 << 20  # bytes: smaller blocks come from the heap, not fresh mappings
TRIM_THRESHOLD = 32 << 20  # bytes: freed heap kept mapped before any goes back to the kernel
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)

_done: bool | None = None


def keep_freed_memory() -> bool:
    """Set the process's malloc thresholds once; returns whether they are set (False off glibc)."""
    global _done
    if _done is None:
        _done = False
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            mallopt = libc.mallopt
        except (OSError, AttributeError):  # macOS, musl, Windows: leave the allocator alone
            return False
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        _done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done
