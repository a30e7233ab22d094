"""A production-shaped sm_100 ragged dot with an f32 output (issue #50), written as Pallas
kernel libraries write it: the kernel whose staged epilogue must reuse SMEM to fit.

Two warpgroups over a persistent loop of output tiles: the first runs a TMA warp
(``x`` and ``w`` blocks into a ring of SMEM stages) and an MMA warp (``tcgen05`` into
one of two TMEM accumulators); the second waits for its last TMA store out of the
epilogue buffer, loads the accumulator, and stores it into the transposed view of a
(1, 32)-tiled, 128-byte swizzled f32 SMEM buffer (``TCGEN05_TRANSPOSED``), then copies
the tile's rows of the current group out in power-of-two pieces. That store has no
conflict-free plan in any layout, so it is staged through SMEM; with the block sizes
of the public library's sm_100 heuristic (64 x 128 x 256, two stages), a staging
buffer past the end of SMEM does not fit in what a block may have, and only reusing
the epilogue buffer (dead between the wait at the top and the store) does.

The group metadata (``group_id``, ``start``, ``size``, ``row0`` per M block) comes in
GMEM, as such libraries compute it on the device before the kernel.
jax 0.12.0.1 API, warpgroup semantics.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

BLACKWELL = (10, 0)
COMPUTE_WG, STORE_WG = 0, 1
TMA_WARP, MMA_WARP = 1, 0


def ragged_dot_f32(
    x: jax.Array,
    w: jax.Array,
    group_id: jax.Array,
    start: jax.Array,
    size: jax.Array,
    row0: jax.Array,
    *,
    block_m: int = 64,
    block_n: int = 128,
    block_k: int = 256,
    stages: int = 2,
    staged_in_place: bool = False,
) -> Any:
    """``out[rows of group g] = x[rows] @ w[g].T`` for the M blocks the metadata lists, f32
    out (``x``: (m, k) bf16, ``w``: (groups, n, k) bf16).

    ``staged_in_place``: the kernel as staging through SMEM makes it, written in Pallas:
    the accumulator stored into a plain buffer over the epilogue buffer's bytes (a
    ``plgpu.RefUnion``), reloaded, and stored into the epilogue buffer."""
    (m, k), (_, n, _) = x.shape, w.shape
    m_blocks, n_blocks = group_id.shape[0], n // block_n
    k_steps = k // block_k
    swizzle = plgpu.find_swizzle(block_k * 16)
    operand = (plgpu.TilingTransform((8, swizzle // 2)), plgpu.SwizzleTransform(swizzle))
    rows_of_32 = (plgpu.TilingTransform((1, 32)), plgpu.SwizzleTransform(128))

    epilogue = plgpu.SMEM((block_m, block_n), jnp.float32, transforms=rows_of_32)
    if staged_in_place:
        epilogue = plgpu.RefUnion(epilogue, plgpu.SMEM((block_n, block_m), jnp.float32))

    def kernel(x_gmem, w_gmem, gid_gmem, start_gmem, size_gmem, row0_gmem, out_gmem):
        def scoped(x_smem, w_smem, epilogue, acc_tmem, loaded, consumed, mma_done, stored):
            acc_smem, staging = epilogue if staged_in_place else (epilogue, None)

            @plgpu.nd_loop((m_blocks * n_blocks,), collective_axes="sm", init_carry=0)
            def tiles(info: Any, carry: Any) -> Any:
                done_tiles = carry
                (linear,) = info.index
                mi, ni = linear // n_blocks, linear % n_blocks
                group, first, rows = gid_gmem[mi], start_gmem[mi], size_gmem[mi]
                # (The M blocks tile the rows: each starts at a multiple of block_m.)
                base = pl.multiple_of(row0_gmem[mi], block_m)
                slot = lax.rem(done_tiles, 2)
                wg = lax.axis_index("wg")

                @pl.when(rows > 0)
                def _tile() -> None:
                    @pl.when(wg == COMPUTE_WG)
                    def _compute() -> None:
                        @plgpu.warp_map
                        def _warps(warp: Any) -> None:

                            @pl.when(warp == TMA_WARP)
                            def _load() -> None:
                                def step(ki: Any, _: Any) -> None:
                                    stage = lax.rem(ki, stages)

                                    @pl.when((ki >= stages) | (done_tiles > 0))
                                    def _() -> None:
                                        plgpu.barrier_wait(consumed.at[stage])

                                    ks = pl.ds(ki * block_k, block_k)
                                    plgpu.copy_gmem_to_smem(
                                        x_gmem.at[pl.ds(base, block_m), ks],
                                        x_smem.at[stage],
                                        loaded.at[stage],
                                    )
                                    plgpu.copy_gmem_to_smem(
                                        w_gmem.at[group, pl.ds(ni * block_n, block_n), ks],
                                        w_smem.at[stage],
                                        loaded.at[stage],
                                    )

                                lax.fori_loop(0, k_steps, step, None)

                            @pl.when((warp == MMA_WARP) & (done_tiles > 1))
                            def _wait_for_the_store() -> None:
                                plgpu.barrier_wait(stored.at[slot])

                            @pl.when(warp == MMA_WARP)
                            def _mma() -> None:
                                def step(ki: Any, _: Any) -> None:
                                    stage = lax.rem(ki, stages)
                                    plgpu.barrier_wait(loaded.at[stage])
                                    plgpu.tcgen05_mma(
                                        acc_tmem.at[:, pl.ds(slot * block_m, block_m)],
                                        w_smem.at[stage],
                                        x_smem.at[stage].T,
                                        consumed.at[stage],
                                        accumulate=ki > 0,
                                    )

                                    @pl.when(ki == k_steps - 1)
                                    def _() -> None:
                                        plgpu.tcgen05_commit_arrive(mma_done.at[slot])

                                lax.fori_loop(0, k_steps, step, None)

                    @pl.when(wg == STORE_WG)
                    def _epilogue() -> None:
                        plgpu.wait_smem_to_gmem(0, wait_read_only=True)
                        plgpu.barrier_wait(mma_done.at[slot])
                        acc = plgpu.async_load_tmem(acc_tmem.at[:, pl.ds(slot * block_m, block_m)])
                        plgpu.wait_load_tmem()
                        acc = plgpu.layout_cast(
                            acc.astype(jnp.float32), plgpu.Layout.TCGEN05_TRANSPOSED
                        )
                        if staging is not None:
                            staging[...] = acc
                            acc = staging[...]
                        acc_smem.T[...] = acc
                        plgpu.commit_smem()
                        offset = first
                        piece = 1 << (block_m.bit_length() - 1)
                        while piece:

                            @pl.when(rows & piece != 0)
                            def _copy(offset: Any = offset, piece: int = piece) -> None:
                                plgpu.copy_smem_to_gmem(
                                    acc_smem.at[pl.ds(offset, piece)],
                                    out_gmem.at[
                                        pl.ds(base + offset, piece), pl.ds(ni * block_n, block_n)
                                    ],
                                )

                            offset = offset + (rows & piece)
                            piece //= 2
                        plgpu.wait_smem_to_gmem(0)
                        plgpu.barrier_arrive(stored.at[slot])

                return done_tiles + (rows > 0).astype(jnp.int32)

        pl.run_scoped(
            scoped,
            plgpu.SMEM((stages, block_m, block_k), x.dtype, transforms=operand),
            plgpu.SMEM((stages, block_n, block_k), w.dtype, transforms=operand),
            epilogue,
            plgpu.TMEM((block_n, 2 * block_m), jnp.float32),
            plgpu.Barrier(num_arrivals=2, num_barriers=stages),
            plgpu.Barrier(num_barriers=stages, orders_tensor_core=True),
            plgpu.Barrier(num_barriers=2, orders_tensor_core=True),
            plgpu.Barrier(num_barriers=2, orders_tensor_core=True),
            collective_axes="wg",
        )

    return plgpu.kernel(
        kernel,
        out_type=jax.ShapeDtypeStruct((m, n), jnp.float32),
        num_threads=2,
        thread_name="wg",
        grid=(2,),
        grid_names=("sm",),
        compiler_params=plgpu.CompilerParams(
            lowering_semantics=plgpu.LoweringSemantics.Warpgroup,
            unsafe_no_auto_barriers=True,
        ),
    )(x, w, group_id, start, size, row0)


def ragged_dot_args(
    m: int = 256, k: int = 512, n: int = 256, groups: int = 3, block_m: int = 64
) -> tuple[jax.ShapeDtypeStruct, ...]:
    blocks = m // block_m + groups - 1
    meta = jax.ShapeDtypeStruct((blocks,), jnp.int32)
    return (
        jax.ShapeDtypeStruct((m, k), jnp.bfloat16),
        jax.ShapeDtypeStruct((groups, n, k), jnp.bfloat16),
        meta,
        meta,
        meta,
        meta,
    )
