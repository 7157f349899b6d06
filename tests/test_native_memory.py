"""The allocator settings a docsbot process starts with (rag/native_memory.py): threads share two
glibc arenas, so memory freed on the model's and Lance's many threads is reused rather than kept
in an arena per thread (a first sync's RSS grew with the repository: issue 36 item 3)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.settings import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator only")

# Six threads allocate while all are alive, then the child counts glibc's arenas (malloc_info).
CHILD = """
import ctypes, re, sys, tempfile, threading
from rag import bound_allocator
print(",".join(bound_allocator() if sys.argv[1] == "bound" else []))
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
together = threading.Barrier(7)
def work():
    held = [bytearray(4096 + i) for i in range(64)]
    together.wait()
    together.wait()
threads = [threading.Thread(target=work) for _ in range(6)]
for thread in threads:
    thread.start()
together.wait()
with tempfile.NamedTemporaryFile() as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    print(len(re.findall(r'<heap nr="', open(out.name).read())))
together.wait()
"""


def arenas(mode: str, **env: str) -> tuple[list[str], int]:
    """What bound_allocator set in a fresh process (`mode` "bound") and the arenas of its threads."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", CHILD, mode], env={**clean, **env, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, check=True, timeout=60)
    names, count = done.stdout.split("\n")[:2]
    return [n for n in names.split(",") if n], int(count)


def test_threads_share_two_arenas_once_the_allocator_is_bound() -> None:
    assert arenas("free")[1] > 2  # glibc's default: an arena per thread that allocates alongside others
    assert arenas("bound") == (["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"], 2)


def test_a_setting_a_person_made_is_left_as_they_made_it() -> None:
    set_, count = arenas("bound", MALLOC_ARENA_MAX="4")
    assert set_ == ["MALLOC_MMAP_THRESHOLD_"] and count == 4
