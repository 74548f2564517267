"""``egglog.bindings`` without importing the high-level ``egglog`` package.

``import egglog.bindings`` first runs ``egglog/__init__.py``, which imports the
high-level API (and ``black``): about 1.8 s. The engine needs only the Rust
bindings (0.1 s), so this module loads the extension by itself and registers it
as ``sys.modules["egglog.bindings"]``; a later ``import egglog`` then finds and
reuses it (an extension module must not be initialized twice).

The extension is loaded when the engine first reads one of its names
(:class:`_Bindings`): a run replayed in Python reads none, and loading it is a large
part of a fresh process's time to its first e-graph result.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from types import ModuleType
from typing import Any

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


class _Bindings(ModuleType):
    """``egglog.bindings``, loaded (:func:`_load`) at the first read of a name it does
    not hold yet; its names are then this module's own (no further call here)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        with _LOADING:
            mod = _load()
            vars(self).update((k, v) for k, v in vars(mod).items() if not k.startswith("__"))
        return getattr(mod, name)


#: one thread loads the extension (it must not be initialized twice)
_LOADING = threading.Lock()
bindings = _Bindings("egglog.bindings")
