"""Register transfers through strided views of refs, judged by JAX's own lowering.

A Pallas kernel that indexes a ref by column (``w_ref[:, j]``), takes a
window of it (``x_ref.at[:, 64:]``) or transposes it
(``plgpu.transpose_ref``) moves registers through a ref whose strides are
not row-major. The lowering keeps those strides for GMEM and untiled SMEM
refs (it only prepends unit dims), so a lane's neighbours may sit 8-16 bytes
apart, and an optimized GMEM transfer then does not coalesce. smalto's
transfer tables (``hw.transfers``, used by the rules) and its checker
(``check.transfers``) must answer exactly as the lowering does: each case
here is lowered by JAX's dialect lowering in a launch context and compared
with both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_kit import layout_attr_text, lower_in_launch, parse, shared_context

from smalto.check.smem import Transforms
from smalto.check.transfers import gmem_transfer_problem, smem_transfer_problem
from smalto.hw.transfers import Transfer, gmem_transfer_supported, smem_transfer_supported

HOPPER = (9, 0)
WORKGROUP = "#gpu.address_space<workgroup>"
BITWIDTHS = {"f32": 32, "bf16": 16, "i8": 8}


@dataclass(frozen=True)
class View:
    """A view of a base ref, as Pallas emits it: ``%view`` from ``%base``."""

    name: str
    base: tuple[int, ...]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: tuple[int, ...] = ()  # subview offsets; empty for a transpose

    def ref_type(self, dtype: str, smem: bool) -> str:
        dims = "x".join(map(str, self.shape))
        space = f", {WORKGROUP}" if smem else ""
        strides = ", ".join(map(str, self.strides))
        return f"memref<{dims}x{dtype}, strided<[{strides}], offset: ?>{space}>"

    def ops(self, dtype: str, smem: bool) -> list[str]:
        """The ops making ``%view`` (annotated with empty transforms where SMEM needs them)."""
        space = f", {WORKGROUP}" if smem else ""
        base = f"memref<{'x'.join(map(str, self.base))}x{dtype}{space}>"
        transforms = " {in_transforms = [[]], out_transforms = [[]]}" if smem else ""
        lines = []
        if smem:
            lines.append(
                f'%base = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> '
                f"{{out_transforms = [[]]}} : () -> {base}"
            )
        source = "%base" if smem else "%arg0"
        if not self.offset:
            transposed = self.ref_type(dtype, smem).replace("offset: ?", "offset: 0")
            lines.append(
                f"%t = memref.transpose {source} (i, j) -> (j, i){transforms} "
                f": {base} to {transposed}"
            )
        else:
            sizes = [*self.shape] if len(self.shape) == len(self.base) else [*self.shape, 1]
            exact = self.ref_type(dtype, smem).replace(
                "offset: ?", f"offset: {_linear(self.offset, self.base)}"
            )
            lines.append(
                f"%t = memref.subview {source}[{', '.join(map(str, self.offset))}] "
                f"[{', '.join(map(str, sizes))}] [{', '.join('1' for _ in self.base)}]"
                f"{transforms} : {base} to {exact}"
            )
        lines.append(
            f"%view = memref.cast %t{transforms} : "
            f"{lines[-1].rsplit(' to ', 1)[1]} to {self.ref_type(dtype, smem)}"
        )
        return lines


def _linear(index: tuple[int, ...], shape: tuple[int, ...]) -> int:
    return sum(i * math.prod(shape[d + 1 :]) for d, i in enumerate(index))


VIEWS = [
    View("column of a (64, 2) table", (64, 2), (64,), (2,), (0, 1)),
    View("column of a (128, 2) table", (128, 2), (128,), (2,), (0, 0)),
    View("column of a (256, 4) table", (256, 4), (256,), (4,), (0, 3)),
    View("window .at[:, 64:]", (64, 128), (64, 64), (128, 1), (0, 64)),
    View("window .at[:, 8:16]", (128, 16), (128, 8), (16, 1), (0, 8)),
    View("transposed ref", (64, 64), (64, 64), (1, 64)),
]


def _layouts(shape: tuple[int, ...]) -> dict[str, fa.FragmentedLayout]:
    out: dict[str, fa.FragmentedLayout] = {}
    elements = math.prod(shape)
    for vec_size in (1, 2, 4):
        if elements % (fa.WARPGROUP_SIZE * vec_size) == 0:
            out[f"strided vec{vec_size}"] = fa.WGStridedFragLayout(shape, vec_size)
    if len(shape) == 1:
        out.update(WGMMA_ROW=fa.WGMMA_ROW_LAYOUT, TCGEN05_ROW=fa.TCGEN05_ROW_LAYOUT)
    else:
        out.update(WGMMA=fa.WGMMA_LAYOUT, WGMMA_TRANSPOSED=fa.WGMMA_TRANSPOSED_LAYOUT)
    return out


def _lowering_rejects(
    view: View, dtype: str, smem: bool, layout: fa.FragmentedLayout, optimized: bool, store: bool
) -> str | None:
    """JAX's lowering of one transfer through the view: None if it lowers, else why not."""
    vector = f"vector<{'x'.join(map(str, view.shape))}x{dtype}>"
    attr = layout_attr_text(layout)
    ref = view.ref_type(dtype, smem)
    flags = f"<{{optimized = {str(optimized).lower()}}}>"
    transforms = "in_transforms = [[]], " if smem else ""
    body = view.ops(dtype, smem)
    if store:
        one = "1" if dtype.startswith("i") else "1.0"
        body += [
            f"%v = arith.constant {{out_layouts = [{attr}]}} dense<{one}> : {vector}",
            f'"mosaic_gpu.vector_store"(%v, %view) {flags} {{{transforms}in_layouts = [{attr}]}} '
            f": ({vector}, {ref}) -> ()",
        ]
    else:
        body.append(
            f'%v = "mosaic_gpu.vector_load"(%view) {flags} {{{transforms}out_layouts = [{attr}]}} '
            f": ({ref}) -> {vector}"
        )
    base = f"memref<{'x'.join(map(str, view.base))}x{dtype}>"
    args = "" if smem else f"%arg0: {base}"
    lines = "\n    ".join(body)
    text = f"module {{\n  func.func @kernel({args}) {{\n    {lines}\n    return\n  }}\n}}\n"
    try:
        lower_in_launch(parse(text))
    except Exception as error:  # noqa: BLE001 -- every rejection counts, whatever its type
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return None


def _cases() -> list[tuple[View, str, bool, str]]:
    return [
        (view, dtype, smem, name)
        for view in VIEWS
        for dtype in BITWIDTHS
        for smem in (False, True)
        for name in _layouts(view.shape)
    ]


@pytest.mark.parametrize(
    ("view", "dtype", "smem", "layout_name"),
    _cases(),
    ids=lambda v: v.name if isinstance(v, View) else str(v),
)
def test_smalto_answers_as_the_lowering_does(
    view: View, dtype: str, smem: bool, layout_name: str
) -> None:
    layout = _layouts(view.shape)[layout_name]
    bitwidth = BITWIDTHS[dtype]
    for store in (False, True):
        for optimized in (True, False):
            rejected = _lowering_rejects(view, dtype, smem, layout, optimized, store)
            mode = Transfer.OPTIMIZED if optimized else Transfer.UNOPTIMIZED
            with shared_context(), ir.Location.unknown():
                if smem:
                    table = smem_transfer_supported(
                        None, None, layout, view.shape, view.strides, bitwidth, mode, True, store
                    )
                    checker = smem_transfer_problem(
                        Transforms(None, None),
                        layout,
                        view.shape,
                        view.strides,
                        bitwidth,
                        optimized=optimized,
                        txmatrix=True,
                        arch=HOPPER,
                        store=store,
                    )
                else:
                    table = gmem_transfer_supported(
                        layout, view.shape, view.strides, bitwidth, mode, store
                    )
                    checker = gmem_transfer_problem(
                        layout,
                        view.shape,
                        view.strides,
                        bitwidth,
                        optimized=optimized,
                        arch=HOPPER,
                        store=store,
                    )
            kind = "store" if store else "load"
            what = f"{kind}, optimized={optimized}: lowering says {rejected}"
            assert table == (rejected is None), f"transfer table disagrees ({what})"
            assert (checker is None) == (rejected is None), f"checker says {checker!r} ({what})"


def test_the_cases_cover_both_answers() -> None:
    """The matrix is worth running only if the lowering both takes and rejects cases in it."""
    view = VIEWS[0]  # a column: its optimized WGMMA_ROW transfer does not coalesce
    assert _lowering_rejects(view, "f32", False, fa.WGMMA_ROW_LAYOUT, True, False) is not None
    assert _lowering_rejects(view, "f32", False, fa.WGMMA_ROW_LAYOUT, False, False) is None


@pytest.mark.parametrize("vec_size", [2, 16])
@pytest.mark.parametrize("store", [False, True], ids=["load", "store"])
def test_sub_byte_vectors_through_a_transposed_view_are_refused_where_jax_miscompiles(
    vec_size: int, store: bool
) -> None:
    """Vectors of i4 along a dim of stride 64: JAX's lowering takes them, and should not.

    For 8 bits and more it moves each vector with ``vector.load``/``store``,
    which the verifier refuses on a non-unit minor stride (the matrix above).
    Below 8 bits it reads or writes ``vec_size`` elements at a flat index made
    from the strides and divided by ``vec_size``: elements that are contiguous
    in memory, i.e. along the *other* dim of a transposed view. Nothing fails,
    the wrong elements move. (The fuzz found this: the checker rejects JAX's
    answer, JAX's lowering takes it.) smalto's tables and checker refuse it.
    """
    view = next(v for v in VIEWS if v.name == "transposed ref")
    layout = fa.WGStridedFragLayout(view.shape, vec_size)
    assert _lowering_rejects(view, "i4", True, layout, False, store) is None  # JAX takes it
    with shared_context(), ir.Location.unknown():
        for optimized in (True, False):
            mode = Transfer.OPTIMIZED if optimized else Transfer.UNOPTIMIZED
            assert not smem_transfer_supported(
                None, None, layout, view.shape, view.strides, 4, mode, True, store
            )
            problem = smem_transfer_problem(
                Transforms(None, None),
                layout,
                view.shape,
                view.strides,
                4,
                optimized=optimized,
                txmatrix=True,
                arch=HOPPER,
                store=store,
            )
            assert problem is not None and "stride 64" in problem
