"""A refusal's message is made when first read, from the module as the pass read it. Where
the module has changed since (an op erased, added or moved), the message says so and
reads none of its ops: an erased op is freed memory, which the bindings would read (the
process crashed). Changed attributes leave the ops in place: the message is made."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import reference
from check_kit import ops_named
from jax._src.lib.mlir import ir

import smalto
from smalto.errors import MODULE_CHANGED

UNSAT = Path(__file__).parents[1] / "unsat"


def _refused(name: str) -> tuple[ir.Module, smalto.InferenceError]:
    module = reference.parse((UNSAT / name).read_text(), reference.make_context())
    with pytest.raises(smalto.InferenceError) as raised:
        smalto.infer_layout(module, arch=(9, 0))
    assert not raised.value.diagnosed
    return module, raised.value


def _erase(op_name: str) -> Callable[[ir.Module], None]:
    def change(module: ir.Module) -> None:
        op = ops_named(module, op_name)[-1]
        with module.context:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()

    return change


def _add_before(op_name: str) -> Callable[[ir.Module], None]:
    def change(module: ir.Module) -> None:
        op = ops_named(module, op_name)[0]
        with module.context:
            op.clone(ip=ir.InsertionPoint(op))

    return change


@pytest.mark.parametrize(
    ("kernel", "change"),
    [
        ("cast_does_not_fit.mlir", _erase("mosaic_gpu.layout_cast")),
        ("cast_does_not_fit.mlir", _add_before("arith.constant")),
        ("cast_strided_then_wgmma.mlir", _erase("mosaic_gpu.layout_cast")),
        ("registers_not_equal.mlir", _add_before("arith.addf")),
    ],
)
def test_a_module_changed_before_the_message_is_read(
    kernel: str, change: Callable[[ir.Module], None]
) -> None:
    module, error = _refused(kernel)
    change(module)
    message = str(error)
    assert message.startswith(smalto.FAILURE_PREFIX)
    assert MODULE_CHANGED in message
    assert "fix:" not in message


def test_changed_attributes_leave_the_ops_so_the_message_is_made() -> None:
    """(From the module as it is when read: JAX's phrase prints the op with the change.)"""
    _, untouched = _refused("cast_does_not_fit.mlir")
    module, error = _refused("cast_does_not_fit.mlir")
    (cast,) = ops_named(module, "mosaic_gpu.layout_cast")
    with module.context:
        cast.attributes["smalto.test_mark"] = ir.UnitAttr.get()
    message = str(error)
    assert MODULE_CHANGED not in message
    # (JAX's words, on the line after smalto's, print the op.)
    first, jax_words, *rest = message.splitlines()
    assert first == str(untouched).splitlines()[0]
    assert jax_words.startswith("jax: ") and jax_words.endswith(" {smalto.test_mark}.")
    assert rest == str(untouched).splitlines()[2:]
    assert rest[0].startswith("fix: change the layout cast at kernel.py:51:8")
