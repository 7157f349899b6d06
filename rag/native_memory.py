"""glibc's allocator, set for a process that embeds and writes on several threads at once.

By default glibc gives each thread that allocates an arena of its own (up to 8 per core) and
serves blocks of up to 32 MB from them once such blocks have been freed: the model's per-batch
buffers (MBs each, on inference threads made per batch) and Lance's writer threads then leave
freed pages scattered over many arenas, and a first sync's RSS grew with the repository (400
awsdocs pages: 956, 991, 1,086, 1,102 MB after each of the first four 512-chunk batches; with
these settings and rag/embeddings.py's: 767, 786, 803 MB). Two arenas, and every block of 1 MB or
more mapped on its own and returned to the system when freed, keep it flat. The settings change
no result, only where memory comes from.
"""
from __future__ import annotations

import ctypes
import os

ARENAS = 2
MMAP_FROM_BYTES = 1 << 20
# mallopt() parameters (malloc.h), each with the variable glibc reads when the process starts:
# one a person set is left as they set it.
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8
_SETTINGS = ((_M_ARENA_MAX, "MALLOC_ARENA_MAX", ARENAS), (_M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", MMAP_FROM_BYTES))


def bound_allocator() -> list[str]:
    """Apply the settings, best called before the process starts threads (an arena a thread already
    has stays its own); returns the variables set. Nothing outside glibc (macOS, musl)."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # no such name outside glibc
        return []
    if not libc.startswith("glibc"):
        return []
    mallopt = ctypes.CDLL(None).mallopt
    return [name for param, name, value in _SETTINGS if name not in os.environ and mallopt(param, value) == 1]
