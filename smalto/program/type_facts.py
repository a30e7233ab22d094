"""What the type of a vector or memref value tells the pass: where it lives, its shape,
its element bitwidth, its strides, and whether it takes SMEM transforms.

Read once per distinct type (``smalto.program.reader`` keeps the answer per context,
and here by the type's text, across contexts): the bindings are slow to ask.
"""

from __future__ import annotations

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir

from smalto.program.view import Kind, TypeInfo

# What each vector or memref type tells, by its text (an immutable key; the
# values are tuples). Bounded, lest a long session grow it.
_INFO_LIMIT = 4096
_info_by_text: dict[str, TypeInfo] = {}


# Where a memref lives, by its memory space as the bindings print it (canonical, so the
# same text is the same attribute): read once per distinct type, with no attribute to
# parse in each context (parsing ``#gpu.address_space`` first in a context costs some
# 0.2 ms).
_SMEM_SPACES = frozenset({"#gpu.address_space<workgroup>", "#mosaic_gpu.smem_cluster"})
_TMEM_SPACE = "#mosaic_gpu.tmem"


def element_bitwidth(element_type: ir.Type) -> int | None:
    """The element's width in bits, as JAX's lowering counts it; None where it has none.

    Only powers of two are widths the lowering supports. The packed 6-bit
    types count whole: 16 values in 128 bits (``b6x16_p32``), one in a byte
    (``p2b6``).
    """
    if isinstance(element_type, ir.FloatTF32Type):
        return 32
    if isinstance(element_type, ir.IntegerType):
        width = ir.IntegerType(element_type).width
    elif isinstance(element_type, ir.FloatType):
        width = ir.FloatType(element_type).width
    elif isinstance(element_type, mgpu.B6x16P32Type):
        width = 128
    elif isinstance(element_type, mgpu.P2B6Type):
        width = 8
    else:
        return None
    return width if width > 0 and width.bit_count() == 1 else None


def facts_by_text(ty: ir.Type) -> TypeInfo:
    """What a vector or memref type tells (``shaped_type_facts``), kept by the type's text.

    Across modules (and contexts), by the type's text: printing a type costs a
    fraction of asking the bindings for its parts.
    """
    text = str(ty)
    facts = _info_by_text.get(text)
    if facts is None:
        facts = shaped_type_facts(ty)
        if len(_info_by_text) >= _INFO_LIMIT:
            _info_by_text.clear()
        _info_by_text[text] = facts
    return facts


def shaped_type_facts(ty: ir.Type) -> TypeInfo:
    """What a vector or memref type tells."""
    if isinstance(ty, ir.VectorType):
        vty = ir.VectorType(ty)
        return (Kind.VECTOR, tuple(vty.shape), element_bitwidth(vty.element_type), None, False)
    mty = ir.MemRefType(ty)
    kind, transformable = Kind.OTHER, False
    space = mty.memory_space
    space_text = None if space is None else str(space)
    if space_text in _SMEM_SPACES:
        kind = Kind.SMEM
        transformable = not isinstance(mty.element_type, mgpu.BarrierType)
    elif space_text == _TMEM_SPACE:
        kind = Kind.TMEM
    try:
        strides: tuple[int, ...] | None = tuple(mty.get_strides_and_offset()[0])
    except (ValueError, RuntimeError):  # the bindings raise either for a non-strided map
        strides = None
    return (kind, tuple(mty.shape), element_bitwidth(mty.element_type), strides, transformable)
