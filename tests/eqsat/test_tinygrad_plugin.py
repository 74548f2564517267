"""The tinygrad plug-in (``eqsat.tinygrad.install``): real programs compile with it to
the same results, with no more integer divisions; it reaches tinygrad's compile
workers; failures inside keep tinygrad's own kernel. Runs on tinygrad's CPU device where
it opens (clang), else on its PYTHON device."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pytest
import tinygrad.codegen as cg
import tinygrad.engine.worker as tw
from tinygrad import Tensor
from tinygrad.helpers import Context

import eqsat.tinygrad
from benchmarks import tinygrad_models as tm
from eqsat import Budget
from eqsat.tinygrad_plugin import (
    STAGES,
    install,
    installed,
    optimizing,
    simplify_kernel,
    uninstall,
    usable_device,
)

DEVICE = usable_device()


@pytest.fixture(autouse=True)
def _clean() -> Any:
    uninstall()
    yield
    uninstall()


def test_device_is_one_that_opens() -> None:
    assert DEVICE in ("CPU", "PYTHON")
    assert (Tensor([1.0, 2.0], device=DEVICE) + 1).numpy().tolist() == [2.0, 3.0]


def test_reexported_by_the_bridge() -> None:
    assert (eqsat.tinygrad.install, eqsat.tinygrad.uninstall, eqsat.tinygrad.optimizing) \
        == (install, uninstall, optimizing)
    assert {"install", "uninstall", "optimizing"} <= set(eqsat.tinygrad.__all__)


def test_install_uninstall_restore_tinygrad() -> None:
    rewrite, init = cg.graph_rewrite, tw._init_worker
    install(budget=Budget(iterations=4))
    assert cg.graph_rewrite is not rewrite and tw._init_worker is not init
    assert installed() == {"engine": "egraph", "stage": "instead", "samples": 2000,
                           "budget": Budget(iterations=4)}
    install(engine="baseline")  # again: replaces the options, one hook
    assert installed()["engine"] == "baseline"
    uninstall()
    assert (cg.graph_rewrite, tw._init_worker, installed()) == (rewrite, init, None)
    uninstall()  # a no-op


def test_optimizing_restores_what_was_installed() -> None:
    with optimizing():
        assert installed()["engine"] == "egraph"
    assert installed() is None
    install(engine="baseline")
    with optimizing(stage="final"):
        assert installed()["stage"] == "final"
    assert installed()["engine"] == "baseline" and installed()["stage"] == "instead"


@pytest.mark.parametrize("kwargs, error", [
    ({"engine": "z3"}, ValueError),
    ({"stage": "late"}, ValueError),
    ({"samples": 0}, ValueError),
    ({"iterations": 3}, TypeError),
    ({"budget": {"seconds": 1}}, TypeError),
])
def test_bad_options_are_refused(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        install(**kwargs)
    assert installed() is None


# program -> do the plug-in's kernels have strictly fewer integer divisions and modulos
PROGRAMS = [
    ("matmul", False),
    ("conv2d", False),
    ("pooling", False),
    ("movement", True),
    ("cumsum", False),
    ("softmax", False),
    ("gather", False),
    ("cnn", False),
    ("integer", False),
]


@pytest.mark.parametrize("name, fewer", PROGRAMS)
def test_programs_bit_identical_and_no_more_divisions(name: str, fewer: bool) -> None:
    plain, plug = tm.compare(name, DEVICE, runs=0)
    assert tm.identical(plain.output, plug.output)
    assert plug.kernels == plain.kernels
    assert plug.ops["divmod"] <= plain.ops["divmod"]
    assert (plug.ops["divmod"] < plain.ops["divmod"]) == fewer


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_stage_bit_identical_with_fewer_divisions(stage: str) -> None:
    plain, plug = tm.compare("movement", DEVICE, runs=0, stage=stage)
    assert tm.identical(plain.output, plug.output)
    assert plug.ops["divmod"] < plain.ops["divmod"]


def _two_kernels() -> tuple[list[bytes], Counter]:
    cg.to_program_cache.clear()
    a = tm.PROGRAMS["movement"](DEVICE)
    b = tm.PROGRAMS["movement"](DEVICE).sum(axis=0)
    Tensor.realize(a, b)
    ops = sum((tm.program_ops(p) for p in cg.to_program_cache.values()), Counter())
    assert len(cg.to_program_cache) == 2
    return [a.numpy().tobytes(), b.numpy().tobytes()], ops


def test_reaches_the_compile_workers() -> None:
    with Context(PARALLEL=1):
        plain, plain_ops = _two_kernels()
        with optimizing():
            assert tw.get_worker_pool() is not None  # tinygrad compiles these in a worker
            plug, plug_ops = _two_kernels()
    assert plain == plug
    assert plug_ops["divmod"] < plain_ops["divmod"]


def _keeps_tinygrads_kernel(monkeypatch: Any, caplog: Any, fake: Any, warning: str) -> None:
    """With ``eqsat.api.optimize`` replaced by ``fake``, the plug-in logs ``warning`` and
    tinygrad's own kernel runs: the same outputs and the same ops as without it."""
    import eqsat.api

    plain = tm.run_side("movement", DEVICE, runs=0)
    monkeypatch.setattr(eqsat.api, "optimize", fake)
    with caplog.at_level(logging.WARNING, logger="eqsat.tinygrad_plugin"), optimizing():
        plug = tm.run_side("movement", DEVICE, runs=0)
    assert warning in caplog.text
    assert tm.identical(plain.output, plug.output) and plug.ops == plain.ops


def test_failure_inside_keeps_tinygrads_kernel(monkeypatch: Any, caplog: Any) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine broke")

    _keeps_tinygrads_kernel(monkeypatch, caplog, broken, "engine broke")


def test_wrong_result_is_caught(monkeypatch: Any, caplog: Any) -> None:
    import eqsat.api
    from eqsat.ir.uop import UOp

    real = eqsat.api.optimize

    def wrong(graph: UOp, **kwargs: Any) -> Any:  # cheaper than anything, and wrong
        res = real(graph, **kwargs)
        return eqsat.api.Result(UOp.const(graph.dtype, 0), 0, res.input_cost + 1, res.stats)

    _keeps_tinygrads_kernel(monkeypatch, caplog, wrong, "differs from the input")


def test_simplify_kernel_without_installing() -> None:
    from tinygrad import dtypes as tdt

    from eqsat.ir.ops import Ops
    from eqsat.ir.sexpr import parse
    from eqsat.tinygrad import from_tinygrad, to_tinygrad

    tiled = parse(open("eqsat/examples/tiled.uop").read())
    kernel = to_tinygrad(tiled).cast(tdt.int32)  # a consumer outside index arithmetic
    out = simplify_kernel(kernel)
    assert installed() is None
    assert out.op is kernel.op and out.dtype == tdt.int32
    ops = {u.op for u in from_tinygrad(out.src[0]).toposort()}
    assert Ops.IDIV not in ops and Ops.MOD not in ops
    assert eqsat.check_equivalent(tiled, from_tinygrad(out.src[0]))
