"""The embedder gives back what a batch needed once the batch is done (issue 36 item 3): a sync's
memory must not keep the model's largest activations for the rest of the process."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.settings import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")

# A fresh process set up as docsbot's (bound allocator, two inference threads) embeds one word,
# then 40 texts of 20 to 300 words, and prints its RSS (kB) before and after the 40.
CHILD = """
from rag import LocalMiniLM, bound_allocator
bound_allocator()

def rss():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS"))

model = LocalMiniLM(threads=2)
model.embed(["hello"])
before = rss()
words = "the service stores each object in a bucket and replicates it across zones for durability".split()
lengths = [20, 60, 120, 200, 300] * 8
model.embed([" ".join(words[(i + j) % len(words)] for j in range(n)) for i, n in enumerate(lengths)])
print(before, rss())
"""


def test_embedding_keeps_no_activation_memory_after_its_batches() -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", CHILD], env={**clean, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, check=True, timeout=120)
    before, after = (int(kb) for kb in done.stdout.split())
    # onnxruntime's arena kept ~188 MB here; without it the process keeps ~5 MB.
    assert (after - before) / 1024 < 50
