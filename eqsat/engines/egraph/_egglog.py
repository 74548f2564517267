"""``egglog.bindings`` without importing the high-level ``egglog`` package.

``import egglog.bindings`` first runs ``egglog/__init__.py``, which imports the
high-level API (and ``black``): about 1.8 s. The engine needs only the Rust
bindings (0.1 s), so this module loads the extension by itself and registers it
as ``sys.modules["egglog.bindings"]``; a later ``import egglog`` then finds and
reuses it (an extension module must not be initialized twice).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

__all__ = ["bindings"]


def _load() -> ModuleType:
    mod = sys.modules.get("egglog.bindings")
    if mod is not None:
        return mod
    if "egglog" in sys.modules:
        from egglog import bindings as mod  # the package is loaded already
        return mod
    spec = importlib.util.find_spec("egglog")
    if spec is None or spec.origin is None:
        raise ImportError("the egglog package (egglog==13.2.0) is not installed")
    pkg = os.path.dirname(spec.origin)
    names = [f for f in os.listdir(pkg) if f.startswith("bindings.") and
             f.endswith((".so", ".pyd"))]
    if not names:
        from egglog import bindings as mod
        return mod
    ext = importlib.util.spec_from_file_location("egglog.bindings", os.path.join(pkg, names[0]))
    if ext is None or ext.loader is None:
        from egglog import bindings as mod
        return mod
    mod = importlib.util.module_from_spec(ext)
    sys.modules["egglog.bindings"] = mod
    try:
        ext.loader.exec_module(mod)
    except BaseException:
        del sys.modules["egglog.bindings"]
        raise
    return mod


bindings = _load()
