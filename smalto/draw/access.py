"""The SMEM addresses each thread touches, instruction by instruction, when JAX 0.12
moves a register array to or from a tiled, swizzled SMEM ref.

Re-deriving JAX's address arithmetic (transfer plans that stagger lanes, the
grouping of tiles into ``stmatrix``/``ldmatrix`` .x1/.x2/.x4, the swizzle) would
be a second implementation to keep in step. Instead this runs JAX's own transfer
code -- ``FragmentedArray.store_tiled``/``load_tiled`` (tiled refs),
``store_untiled``/``load_untiled`` (untiled refs) and ``load_strided`` (strided
layouts), chosen as the ``vector_store``/``vector_load`` lowering chooses them --
into a scratch function, then evaluates the integer arithmetic it emitted for
the 128 threads of a warpgroup at once, with numpy. The ref sits at SMEM address
0; values stored are zeros (only addresses matter).

The instructions found are the SMEM accesses of the emitted code, in order:
``nvvm.stmatrix``/``nvvm.ldmatrix`` (each active lane gives the address of one
16-byte matrix row), ``llvm.store``/``llvm.load`` and ``vector.store``/
``vector.load`` (each lane moves one vector).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import func
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import launch_context as lc
from jax.experimental.mosaic.gpu import utils

from smalto.basics.mlir import make_context

THREADS = fa.WARPGROUP_SIZE
WARP_SIZE = fa.WARP_SIZE


class TransferError(ValueError):
    """JAX's lowering cannot move this layout to or from this ref (its message).

    ``no_plan``: the only reason is that no transfer plan free of bank conflicts
    exists (``optimized=False`` transfers it anyway).
    """

    def __init__(self, message: str, no_plan: bool = False) -> None:
        super().__init__(message)
        self.no_plan = no_plan


class AddressModelError(RuntimeError):
    """The emitted code computes an address in a way this evaluator does not follow."""


@dataclass(frozen=True)
class Instruction:
    """One SMEM instruction of the transfer, as every warp of the warpgroup runs it.

    ``address[t]`` is the byte address thread ``t`` (0-127) gives; each active
    lane accesses ``lane_bytes`` bytes from it. ``active[l]`` says whether lane
    ``l`` of each warp takes part: ``ldmatrix``/``stmatrix`` .x1 and .x2 read
    only the first 8 and 16 lanes' addresses.
    """

    name: str
    lane_bytes: int
    address: np.ndarray  # (128,) int64
    active: np.ndarray  # (32,) bool

    @property
    def is_matrix(self) -> bool:
        return self.name.startswith(("stmatrix", "ldmatrix"))


@dataclass(frozen=True)
class Transfer:
    """All SMEM instructions of one ``vector_store``/``vector_load``, and how JAX
    lowers it (the FragmentedArray method and the plan it picked)."""

    instructions: tuple[Instruction, ...]
    method: str  # e.g. "store_tiled"
    plan: str  # "trivial", "staggered (...)", or "" where no plan applies


def transfer_instructions(
    layout: fa.FragmentedLayout,
    shape: tuple[int, ...],
    element_type: str,
    tiling: tuple[int, ...] | None,
    swizzle: int,
    *,
    load: bool = False,
    optimized: bool = True,
    arch: tuple[int, int] = (9, 0),
) -> Transfer:
    """The SMEM instructions JAX emits to store (or load) an array of ``shape`` and
    ``element_type`` in ``layout`` to (from) an SMEM ref tiled by ``tiling`` (None:
    untiled) and swizzled by ``swizzle`` bytes (16: none).

    Raises ``TransferError`` with JAX's message where JAX's lowering rejects it.
    """
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        i32 = ir.IntegerType.get_signless(32)
        module.operation.attributes["mosaic_gpu.arch_major"] = ir.IntegerAttr.get(i32, arch[0])
        module.operation.attributes["mosaic_gpu.arch_minor"] = ir.IntegerAttr.get(i32, arch[1])
        try:
            element = ir.Type.parse(element_type)
        except ir.MLIRError:
            raise TransferError(f"unknown element type {element_type!r}") from None
        ref_type = ir.MemRefType.get(shape, element, memory_space=utils.smem())
        if tiling is not None:
            from jax.experimental.mosaic.gpu.dialect_lowering import transform_type

            ref_type = transform_type(ref_type, (lc.TileTransform(tuple(tiling)),))
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("transfer", ir.FunctionType.get([ref_type], []))
        block = function.add_entry_block()
        with ir.InsertionPoint(block):
            try:
                method = _emit(layout, shape, element, block.arguments[0], tiling, swizzle, load,
                               optimized)  # fmt: skip
            except _JAX_REFUSALS as error:
                no_plan = isinstance(error, fa.TransferPlanDerivationError)
                raise TransferError(_message(error), no_plan) from None
        instructions = _Evaluator(block.arguments[0]).run(block)
        plan = _plan_name(block, layout, method)
    return Transfer(tuple(instructions), method, plan)


_JAX_REFUSALS = (
    ValueError, NotImplementedError, AssertionError, fa.TransferPlanDerivationError,
    fa.UnsupportedTransferError, fa.TxMatrixIneligible,
)  # fmt: skip


def _message(error: Exception) -> str:
    text = " ".join(str(error).split())
    name = type(error).__name__
    return f"{name}: {text}" if text else name


def _emit(
    layout: fa.FragmentedLayout,
    shape: tuple[int, ...],
    element: ir.Type,
    ref: ir.Value,
    tiling: tuple[int, ...] | None,
    swizzle: int,
    load: bool,
    optimized: bool,
) -> str:
    """Calls the FragmentedArray method the vector_store/vector_load lowering calls."""
    is_signed = True if isinstance(element, ir.IntegerType) else None
    if isinstance(layout, fa.WGStridedFragLayout | fa.WGSplatFragLayout):
        if tiling is not None or swizzle != 16:
            raise ValueError(
                f"{type(layout).__name__} transfers only to untiled, unswizzled refs "
                "(JAX: transformed or swizzled strided transfers are not supported)"
            )
        if load:
            if isinstance(layout, fa.WGSplatFragLayout):
                raise ValueError("a load cannot produce a splat layout")
            fa.FragmentedArray.load_strided(ref, is_signed=is_signed, vec_size=layout.vec_size)
            return "load_strided"
        value = fa.FragmentedArray.splat(utils.c(0, element), shape, layout, is_signed=is_signed)
        value.store_untiled(ref, optimized=optimized)
        return "store_untiled"
    if not isinstance(layout, fa.TiledLayout):
        raise ValueError(f"cannot transfer layout {layout}")
    if load:
        if tiling is not None:
            fa.FragmentedArray.load_tiled(ref, swizzle, is_signed=is_signed, layout=layout,
                                          optimized=optimized, tiling_rank=len(tiling))  # fmt: skip
            return "load_tiled"
        fa.FragmentedArray.load_untiled(ref, layout=layout, swizzle=swizzle, is_signed=is_signed,
                                        optimized=optimized)  # fmt: skip
        return "load_untiled"
    value = fa.FragmentedArray.splat(utils.c(0, element), shape, layout, is_signed=is_signed)
    if tiling is not None:
        value.store_tiled(ref, swizzle, optimized, tiling_rank=len(tiling))
        return "store_tiled"
    value.store_untiled(ref, swizzle=swizzle, optimized=optimized)
    return "store_untiled"


def _plan_name(block: ir.Block, layout: fa.FragmentedLayout, method: str) -> str:
    """A staggered plan shows in the code as lane-dependent selects of offsets."""
    if not isinstance(layout, fa.TiledLayout):
        return ""
    staggered = any(op.operation.name == "arith.select" for op in block.operations)
    return "staggered" if staggered else "trivial"


# --- evaluating the emitted code ---------------------------------------------------------

Array = np.ndarray
_INT_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.divui": np.floor_divide,
    "arith.divsi": np.floor_divide,
    "arith.remui": np.remainder,
    "arith.remsi": np.remainder,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
    "arith.shli": np.left_shift,
    "arith.shrui": np.right_shift,
    "arith.minui": np.minimum,
    "arith.maxui": np.maximum,
    "llvm.add": np.add,
    "llvm.sub": np.subtract,
    "llvm.mul": np.multiply,
    "llvm.udiv": np.floor_divide,
    "llvm.urem": np.remainder,
    "llvm.and": np.bitwise_and,
    "llvm.or": np.bitwise_or,
    "llvm.xor": np.bitwise_xor,
    "llvm.shl": np.left_shift,
    "llvm.lshr": np.right_shift,
}
_PASS_THROUGH = {
    "arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci",
    "llvm.ptrtoint", "llvm.inttoptr", "llvm.zext", "llvm.sext", "llvm.trunc",
}  # fmt: skip
_COMPARE: dict[int, Callable[[Array, Array], Array]] = {
    0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater,
    5: np.greater_equal, 6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal,
}  # fmt: skip  # arith.cmpi predicates: eq ne slt sle sgt sge ult ule ugt uge


@dataclass(frozen=True)
class _Ref:
    """A memref derived from the transferred ref: element offset and strides from its type."""

    offset: int
    strides: tuple[int, ...]
    element_bytes: float


@dataclass(frozen=True)
class _Descriptor:
    ref: _Ref


class _Evaluator:
    def __init__(self, ref: ir.Value) -> None:
        self.values: dict[ir.Value, object] = {ref: _ref_of(ref.type)}
        self.thread = np.arange(THREADS, dtype=np.int64)

    def run(self, block: ir.Block) -> list[Instruction]:
        instructions = []
        for op in block.operations:
            name = op.operation.name
            instruction = self.access(op.operation, name)
            if instruction is not None:
                instructions.append(instruction)
                continue
            result = self.evaluate(op.operation, name)
            for out in op.operation.results:
                self.values[out] = result
        return instructions

    def operand(self, op: ir.Operation, index: int) -> object:
        return self.values.get(op.operands[index])

    def integer(self, op: ir.Operation, index: int) -> Array:
        value = self.operand(op, index)
        if not isinstance(value, np.ndarray):
            raise AddressModelError(f"an address depends on a value this evaluator lacks: {op}")
        return value

    def evaluate(self, op: ir.Operation, name: str) -> object:
        args = [self.values.get(v) for v in op.operands]
        arrays = [a for a in args if isinstance(a, np.ndarray)]  # all of args when ``known``
        known = len(arrays) == len(args)
        if name in ("arith.constant", "llvm.mlir.constant"):
            attribute = op.attributes["value"]
            if isinstance(attribute, ir.IntegerAttr):
                return np.full(THREADS, ir.IntegerAttr(attribute).value, dtype=np.int64)
            return None
        if name == "gpu.thread_id":
            return self.thread if _dimension(op) == "x" else np.zeros(THREADS, dtype=np.int64)
        if name == "gpu.block_dim":
            return np.full(THREADS, THREADS if _dimension(op) == "x" else 1, dtype=np.int64)
        if name in _INT_BINARY and known:
            return _INT_BINARY[name](arrays[0], arrays[1])
        if name in _PASS_THROUGH and known:
            return args[0]
        if name == "arith.cmpi" and known:
            predicate = ir.IntegerAttr(op.attributes["predicate"]).value
            return _COMPARE[predicate](arrays[0], arrays[1]).astype(np.int64)
        if name == "arith.select" and known:
            return np.where(arrays[0] != 0, arrays[1], arrays[2])
        if name == "builtin.unrealized_conversion_cast" and isinstance(args[0], _Ref):
            return _Descriptor(args[0])
        if name == "llvm.extractvalue" and isinstance(args[0], _Descriptor):
            position = list(ir.DenseI64ArrayAttr(op.attributes["position"]))
            if position == [1]:  # the aligned pointer: the ref is at address 0
                return np.zeros(THREADS, dtype=np.int64)
            if position == [2]:  # the offset, in elements
                return np.full(THREADS, args[0].ref.offset, dtype=np.int64)
            return None
        if name == "llvm.getelementptr" and known:
            return self.element_pointer(op, args)
        if args and isinstance(args[0], _Ref) and len(op.results) == 1:
            if isinstance(op.results[0].type, ir.MemRefType):  # a view of the ref: from its type
                return _ref_of(op.results[0].type)
        return None

    def element_pointer(self, op: ir.Operation, args: list) -> Array:
        raw = list(ir.DenseI32ArrayAttr(op.attributes["rawConstantIndices"]))
        element_bytes = _type_bytes(ir.TypeAttr(op.attributes["elem_type"]).value)
        dynamic = iter(args[1:])
        if len(raw) != 1:
            raise AddressModelError(f"getelementptr with {len(raw)} indices: {op}")
        index = next(dynamic) if raw[0] == _DYNAMIC_INDEX else raw[0]
        offset = np.asarray(index, dtype=np.int64) * element_bytes
        if np.any(offset % 1):
            raise AddressModelError(f"a pointer into the middle of a byte: {op}")
        return args[0] + offset.astype(np.int64)

    def access(self, op: ir.Operation, name: str) -> Instruction | None:
        match name:
            case "nvvm.stmatrix" | "nvvm.ldmatrix":
                return self.matrix_access(op, name)
            case "llvm.store" | "llvm.load":
                pointer = self.integer(op, 1 if name == "llvm.store" else 0)
                moved = op.operands[0].type if name == "llvm.store" else op.results[0].type
                kind = "st.shared" if name == "llvm.store" else "ld.shared"
                return _plain(kind, pointer, _type_bytes(moved))
            case "vector.store" | "vector.load" | "memref.store" | "memref.load":
                storing = name.endswith("store")
                first = 1 if storing else 0
                ref = self.operand(op, first)
                if not isinstance(ref, _Ref):
                    raise AddressModelError(f"an access to a ref this evaluator lacks: {op}")
                indices = [self.integer(op, i) for i in range(first + 1, len(op.operands))]
                element = ref.offset + sum(
                    (i * s for i, s in zip(indices, ref.strides, strict=True)),
                    np.zeros(THREADS, dtype=np.int64),
                )
                moved = op.operands[0].type if storing else op.results[0].type
                address = element * ref.element_bytes
                kind = "st.shared" if storing else "ld.shared"
                return _plain(kind, address.astype(np.int64), _type_bytes(moved))
        return None

    def matrix_access(self, op: ir.Operation, name: str) -> Instruction:
        pointer = self.integer(op, 0)
        shape = str(op.attributes["shape"])  # #nvvm.ld_st_matrix_shape<m = 8, n = 8>
        m, n = (int(part.split("=")[1]) for part in shape[shape.index("<") + 1 : -1].split(","))
        element_bits = 8 if "b8" in str(op.attributes["eltType"]).lower() else 16
        if name == "nvvm.ldmatrix":
            matrices = ir.IntegerAttr(op.attributes["num"]).value
        else:  # each 32-bit source register of each lane holds 4 bytes of the matrices
            matrices = WARP_SIZE * 4 * (len(op.operands) - 1) // (m * n * element_bits // 8)
        rows = matrices * m  # one lane per matrix row gives its address
        active = np.arange(WARP_SIZE) < rows
        return Instruction(
            f"{name.removeprefix('nvvm.')}.x{matrices}", n * element_bits // 8, pointer, active
        )


_DYNAMIC_INDEX = -(2**31)


def _plain(kind: str, address: Array, lane_bytes: float) -> Instruction:
    if lane_bytes % 1:
        raise AddressModelError(f"a {lane_bytes * 8:g}-bit access is not whole bytes")
    size = int(lane_bytes)
    return Instruction(f"{kind} {size} B", size, address, np.ones(WARP_SIZE, dtype=bool))


def _dimension(op: ir.Operation) -> str:
    return str(op.attributes["dimension"]).rstrip(">")[-1]  # #gpu<dim x>


def _ref_of(memref_type: ir.Type) -> _Ref:
    ref_type = ir.MemRefType(memref_type)
    strides, offset = ref_type.get_strides_and_offset()
    if offset == ir.ShapedType.get_dynamic_stride_or_offset():
        raise AddressModelError(f"a ref with a dynamic offset: {ref_type}")
    return _Ref(
        int(offset), tuple(int(s) for s in strides), utils.bitwidth(ref_type.element_type) / 8
    )


def _type_bytes(ty: ir.Type) -> float:
    if isinstance(ty, ir.VectorType):
        vector = ir.VectorType(ty)
        return math.prod(vector.shape) * utils.bitwidth(vector.element_type) / 8
    return utils.bitwidth(ty) / 8
