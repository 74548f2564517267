"""The packages' layers: no module imports from a layer above its own.

From the bottom: the IR (``eqsat.ir``); the rules, the cost models and the test
workloads (``rules``, ``extraction``, ``workloads``); the engines (``eqsat.engines``);
the public API (``eqsat``, ``eqsat.api``); the lowering (``lowering``, which optimizes
through the API); the command line (``eqsat.cli``), which reaches all of them.
Imports inside functions count too: a late import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("eqsat", "rules", "extraction", "lowering", "workloads")

# module prefix -> layer (the longest matching prefix decides)
LAYERS = {
    "eqsat.ir": 0,
    "rules": 1, "extraction": 1, "workloads": 1,
    "eqsat.engines": 2,
    "eqsat": 3, "eqsat.api": 3,
    "lowering": 4,
    "eqsat.cli": 5, "eqsat.__main__": 5,
}


def layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports(module: str, path: Path) -> set[str]:
    """Every project module ``module`` imports, at any depth of its code."""
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + is_pkg]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.split(".")[0] in PACKAGES}


def test_layer_table():
    assert layer("eqsat.ir.uop") == 0 and layer("eqsat.engines.egraph.engine") == 2
    assert layer("eqsat") == 3 and layer("eqsat.cli") == 5 and layer("rules.native") == 1
    assert layer("workloads.kernels") == 1


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_import_from_a_layer_above(module):
    path = modules()[module]
    above = sorted(m for m in imports(module, path) if layer(m) > layer(module))
    assert not above, f"{module} (layer {layer(module)}) imports from above: {above}"


#: the rule language and what a rule written in Python is made of: a family module of
#: rules (rules/<family>.py) imports these and the IR only, never another family (the
#: registry ``rules``: where_gate_given_valid simplifies under its condition with every
#: rule, late)
RULE_LANGUAGE = ("rules.lang", "rules.lang_baseline", "rules.lang_egglog", "rules.common",
                 "rules.computed", "rules.native", "rules.divmod_core", "rules")


def _families() -> list[str]:
    return sorted(m for m in modules() if m.startswith("rules.") and m.count(".") == 1
                  and m not in RULE_LANGUAGE and m != "rules.proof")


def test_families_are_found():
    assert {"rules.identity", "rules.divmod", "rules.where"} <= set(_families())


@pytest.mark.parametrize("module", _families())
def test_a_rule_family_imports_the_rule_language_and_the_ir_only(module):
    bad = sorted(m for m in imports(module, modules()[module])
                 if layer(m) != 0 and m not in RULE_LANGUAGE)
    assert not bad, f"{module} imports {bad}"
