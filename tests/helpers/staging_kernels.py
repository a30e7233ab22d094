"""The epilogue family that compiles with every transfer optimized only when staged through
SMEM (issue #42), as the staging tests, the GPU tests and ``bench.staging`` share it: each
kernel with its arch, arguments and what staging does to it."""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
from user_kernels_lowering import tmem_row_sums
from user_kernels_ragged import ragged_dot_args, ragged_dot_f32
from user_kernels_staging import (
    collective_narrow_out,
    tcgen05_plus_bias_row,
    tcgen05_three_epilogues,
    two_warpgroups_narrow_out,
)
from user_kernels_unoptimized import (
    BLACKWELL,
    F8,
    HOPPER,
    matmul_narrow_out,
    sds,
    tcgen05_narrow_out,
    tcgen05_row_max_and_out,
    tcgen05_shift_by_table_column,
)

BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32


def _a(dtype: Any = BF16) -> Any:
    return sds((128, 64), dtype)


def _b(dtype: Any = BF16) -> Any:
    return sds((64, 128), dtype)


# (name, arch, kernel, args, staged ops, the largest staging buffer in bytes (0: it reuses
# SMEM the kernel has: the reductions' scratch, or a buffer dead around the op; in
# ``REUSES_DEAD_SMEM``), warpgroups)
STAGED_KERNELS = [
    # The MMA's operands (32 KiB) are dead once the wait for the MMA is passed: the staging
    # buffer of the result takes their bytes.
    ("tcgen05 bf16 out", BLACKWELL, functools.partial(tcgen05_narrow_out, out_dtype=BF16),
     (_a(), _b()), 1, 0, 1),
    ("tcgen05 f16 out", BLACKWELL, functools.partial(tcgen05_narrow_out, out_dtype=F16),
     (_a(F16), _b(F16)), 1, 0, 1),
    ("tcgen05 fp8 out", BLACKWELL, functools.partial(tcgen05_narrow_out, out_dtype=F8),
     (_a(), _b()), 1, 0, 1),
    # (A wgmma's operands, dead after the wait_group 0 that follows its commit.)
    ("wgmma fp8 out", HOPPER, functools.partial(matmul_narrow_out, out_dtype=F8), (_a(), _b()),
     1, 0, 1),
    # A 2-D tile and a row vector, both 16-bit: one region serves both round trips.
    ("tcgen05 tile and row max", BLACKWELL,
     functools.partial(tcgen05_row_max_and_out, out_dtype=BF16), (_a(), _b()), 2, 0, 1),
    ("tcgen05 bf16 row sums", BLACKWELL, functools.partial(tmem_row_sums, out_dtype=BF16),
     (_a(), _b()), 1, 0, 1),
    # (A collective MMA's operands are never proven dead: past the end.)
    ("collective tcgen05 bf16 out", BLACKWELL, functools.partial(collective_narrow_out,
     out_dtype=BF16), (sds((256, 64), BF16), _b()), 1, 128 * 128 * 2, 1),
    ("two warpgroups fp8 out", HOPPER, functools.partial(two_warpgroups_narrow_out,
     out_dtype=F8), (_a(), _b()), 1, 64 * 128, 2),
    # GMEM loads after the MMA: a bf16 row vector broadcast over the rows, an f32 column of
    # a table (each buffer over the MMA's operands, dead after its wait).
    ("tcgen05 plus a bf16 bias row", BLACKWELL, tcgen05_plus_bias_row,
     (_a(), _b(), sds((128,), BF16)), 1, 0, 1),
    ("tcgen05 shift by a table column", BLACKWELL, tcgen05_shift_by_table_column,
     (_a(), _b(), sds((128, 2), F32)), 1, 0, 1),
]  # fmt: skip

# The kernels whose staging buffer takes SMEM of the kernel's own that is dead around the op.
REUSES_DEAD_SMEM = {
    "tcgen05 bf16 out",
    "tcgen05 f16 out",
    "tcgen05 fp8 out",
    "wgmma fp8 out",
    "tcgen05 tile and row max",
    "tcgen05 bf16 row sums",
    "tcgen05 plus a bf16 bias row",
    "tcgen05 shift by a table column",
}

# Kernels whose staging reuses the kernel's own dead SMEM (issue #50), for ``bench.staging``
# (``tests/beyond_jax/test_smem_reuse.py`` tests them): (name, arch, kernel, args).
SMEM_REUSE_KERNELS = [
    ("three epilogues (bf16, bf16, f32)", BLACKWELL, tcgen05_three_epilogues,
     (_a(), _b())),
    ("ragged dot, f32 out (sm_100)", BLACKWELL, ragged_dot_f32, ragged_dot_args()),
]  # fmt: skip
