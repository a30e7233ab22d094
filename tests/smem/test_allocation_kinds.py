"""Each kind of SMEM allocation, read off real kernels: its bytes, padding, offset and
extent (the figures JAX's lowering allocates: ``test_map_equals_jax_lowering.py``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from smalto.basics.mlir import make_context, parse_module
from smalto.infer import infer_layout
from smalto.smem.allocations import (
    BARRIERS,
    KERNEL_SCRATCH,
    PIPELINE,
    REDUCTION,
    SCRATCH,
    STAGED_BUFFER,
    TMEM_ADDRESS,
    Allocation,
    SmemMap,
    read_smem_map,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
BLACKWELL_MATMUL = CORPUS / "kernels" / "blackwell_matmul_t128x128x64_s4.mlir"
SOFTMAX = CORPUS / "kernels" / "custom_softmax_rows_bcast_hint.mlir"
MOSAIC_WGMMA = (
    CORPUS / "mosaic_tests" / "MosaicGpuDialectSm90ATest.test_wgmma_kernel_with_tma16.mlir"
)
SCALAR_REDUCE = CORPUS / "pallas_tests" / "PallasCallWGTest.test_scalar_reduce10.mlir"
BROADCAST = CORPUS / "pallas_tests" / "PallasCallWGTest.test_broadcast_in_dim11.mlir"


def _map(path: Path, arch: tuple[int, int] = (9, 0), **infer: bool) -> SmemMap:
    with make_context():
        module = parse_module(path.read_text(), path=str(path))
        if infer:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                infer_layout(module, arch=arch, **infer)
        return read_smem_map(module, arch)


def _of(smem: SmemMap, kind: str) -> list[Allocation]:
    return [a for a in smem.allocations if a.kind == kind]


@pytest.fixture(scope="module")
def blackwell() -> SmemMap:
    return _map(BLACKWELL_MATMUL, (10, 0))


def test_pipeline_buffers_have_a_stage_a_row(blackwell: SmemMap) -> None:
    buffers = sorted(_of(blackwell, PIPELINE), key=lambda a: a.offset)
    assert [(a.offset, a.what, a.bytes, a.stages) for a in buffers] == [
        (0, "4x128x64xf16", 65536, 4),
        (98304, "4x64x128xf16", 65536, 4),
        (163840, "2x16xi8", 32, 2),
    ]
    assert buffers[0].stage_bytes == 128 * 64 * 2
    # Pallas rounds every scoped allocation up to 1024 bytes: 32 bytes take 1024.
    assert (buffers[2].footprint, buffers[2].padding) == (1024, 992)


def test_scoped_scratch_is_taken_only_where_used(blackwell: SmemMap) -> None:
    (epilogue,) = _of(blackwell, SCRATCH)
    assert (epilogue.offset, epilogue.what, epilogue.bytes) == (65536, "2x128x64xf16", 32768)
    pipeline = max(_of(blackwell, PIPELINE), key=lambda a: a.bytes)
    # The epilogue's buffer starts after the pipeline's last use: never taken at once.
    assert epilogue.start > pipeline.end
    assert not epilogue.overlaps_in_time(pipeline)


def test_barriers_and_the_tmem_address_sit_at_the_end_for_the_whole_kernel(
    blackwell: SmemMap,
) -> None:
    barriers = _of(blackwell, BARRIERS)
    assert [a.bytes for a in barriers] == [32, 32, 16, 16, 16, 16]  # 8 bytes a barrier
    (slot,) = _of(blackwell, TMEM_ADDRESS)  # sliced twice in the module: one region
    assert (slot.offset, slot.bytes) == (164992, 4)
    whole = (0, len(blackwell.ops) - 1)
    assert all((a.start, a.end) == whole for a in [*barriers, slot])
    assert blackwell.reserved == 132
    assert blackwell.total == blackwell.size == 164996 == slot.offset + slot.bytes


def test_peak_is_where_most_is_in_use(blackwell: SmemMap) -> None:
    peak, where = blackwell.peak
    assert peak == 164996
    assert where is not None
    in_use = blackwell.in_use_at(where)
    assert in_use == 65536 + 65536 + 1024 + 132  # both pipeline buffers, their barrier ring's
    assert {a.what for a in blackwell.top_users(3)} == {"4x128x64xf16", "4x64x128xf16", "2x16xi8"}
    assert blackwell.over == 0


def test_reduction_scratch_from_the_reductions_attributes() -> None:
    smem = _map(SOFTMAX)
    reductions = _of(smem, REDUCTION)
    assert [(a.offset, a.bytes, a.what) for a in reductions] == [
        (131072, 2048, "512xf32"),
        (131072, 2048, "512xf32"),
    ]
    assert all(a.start == a.end for a in reductions)  # taken for its op alone
    assert smem.lines[reductions[0].index] == reductions[0].line
    assert reductions[0].line is not None and SOFTMAX.name in reductions[0].line


def test_a_scalar_reduction_slices_four_elements() -> None:
    smem = _map(SCALAR_REDUCE)
    (scratch,) = _of(smem, REDUCTION)
    assert (scratch.what, scratch.bytes, scratch.footprint) == ("4xi32", 16, 1024)
    # Pallas reserved its reduction scratch (2048 bytes) by estimate: half is never taken.
    assert (smem.total, smem.unused) == (2048, 1024)


def test_a_mosaic_gpu_kernels_own_scratch_is_laid_out_by_the_launch() -> None:
    smem = _map(MOSAIC_WGMMA)
    scratch = _of(smem, KERNEL_SCRATCH)
    assert [(a.offset, a.what) for a in scratch] == [
        (0, "256x32xbf16"),
        (16384, "32x32xbf16"),
        (18432, "256x32xf32"),
    ]
    assert smem.reserved == smem.total == 51208
    assert smem.peak == (51208, None)


def test_a_staged_buffer_is_its_own_kind() -> None:
    smem = _map(BROADCAST, stage_through_smem=True)
    (staged,) = _of(smem, STAGED_BUFFER)
    assert (staged.offset, staged.bytes) == (0, 65536)
    assert smem.total == 65536


@pytest.mark.parametrize(
    ("arch", "mma", "wait"),
    [
        # A tcgen05 MMA's operands until the wait on the barrier its commit arrives on.
        ((10, 0), "mosaic_gpu.tcgen05_mma", "nvvm.mbarrier.try_wait.parity"),
        # A wgmma's until the wait_group 0 after its commit.
        ((9, 0), "mosaic_gpu.wgmma", "llvm.inline_asm"),
    ],
)
def test_an_mma_operand_is_taken_until_the_wait_for_the_mma(
    arch: tuple[int, int], mma: str, wait: str
) -> None:
    """A Pallas matmul's operands (``a @ b`` stored as bf16): their last use is not the
    MMA, which still reads them when it returns, but the wait that ends its reads."""
    import functools
    import sys

    import jax.numpy as jnp

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "helpers"))
    from user_kernels_unoptimized import matmul_narrow_out, sds, tcgen05_narrow_out

    import smalto.jax

    kernel = tcgen05_narrow_out if arch == (10, 0) else matmul_narrow_out
    fn = functools.partial(kernel, out_dtype=jnp.bfloat16)
    args = (sds((128, 64), jnp.bfloat16), sds((64, 128), jnp.bfloat16))
    (captured,) = smalto.jax.capture(fn, *args, arch=arch, by="smalto")
    module = captured.module()
    with module.context:
        smem = read_smem_map(module, arch)
    (last_mma,) = [i for i, name in enumerate(smem.ops) if name == mma]
    operands = [a for a in _of(smem, SCRATCH) if a.used_from < last_mma]
    assert [a.bytes for a in operands] == [128 * 64 * 2, 64 * 128 * 2]
    for operand in operands:
        assert smem.ops[operand.end] == wait, operand
        assert last_mma < operand.end < last_mma + 12
