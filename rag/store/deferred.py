"""`import lancedb` without the REST namespace client's nine API modules.

lancedb imports lance_namespace, which imports models from lance_namespace_urllib3_client; that
package's `__init__` also imports its API classes, whose pydantic-validated methods are built at
import: ~0.5 s of lancedb's 0.9 s on a 2-core machine, on every command that opens the index. Only
a connection to a REST namespace server uses them, and docsbot never makes one (a folder, or s3://
and the like, through Lance itself).

`defer_package_init` registers the package with its `__init__` not yet run: its submodules (the
models that lance_namespace imports) load as usual, and the `__init__` runs, once, the first time
a name is read from the package itself, so nothing that uses the client can tell the difference.
"""
from __future__ import annotations

import importlib.util
import sys

NAMESPACE_CLIENT = "lance_namespace_urllib3_client"


def defer_package_init(name: str) -> None:
    """Register package `name` so that its `__init__` runs on the first read of one of its names."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed, or not a package: a plain import says so when it matters
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def first_read(attribute: str) -> object:
        del package.__dict__["__getattr__"]  # from now on an ordinary module
        loader.exec_module(package)
        return getattr(package, attribute)

    package.__dict__["__getattr__"] = first_read
    sys.modules[name] = package
