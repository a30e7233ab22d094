"""A Blackwell int4-quantized ragged dot, as Pallas kernel libraries write it.

``python -m bench.quantized_ragged_dot [-o DIR]`` lowers the kernel below for
sm_100 in several configurations (no GPU needed) and writes the modules JAX
hands to its layout-inference pass, one ``.mlir`` file each, with an
``index.json`` giving their arch, into ``tests/corpus/quantized/`` by default.

The kernel computes ``out[m] = x[m] @ dequant(w[group(m)]).T`` for rows ``m``
of the bf16 lhs ``x`` grouped by ``group_sizes``, where the weights ``w`` are
int4 (one ``(N, K)`` matrix per group, stored K-minor) with one bf16 scale per
output column and per ``quant_k`` rows of K. Its shape is the one of the
public quantized ragged dots for Mosaic GPU on Blackwell: three warpgroups in
a persistent loop over (row block, column block) tiles,

- the main warpgroup: one warp issues the TMA copies of ``w`` and its scales,
  one those of ``x``, one the ``tcgen05`` MMAs (the dequantized weights as the
  MMA's lhs, from TMEM; ``x`` transposed from SMEM as its rhs);
- the dequantizing warpgroup: loads an int4 tile from SMEM into registers,
  converts it to bf16, scales every element by its column's scale (with
  ``inline_mgpu``: a loop over the registers in Mosaic GPU's own array API,
  which is where most of the module's ops come from), and stores the tile
  into TMEM for the MMA;
- the storing warpgroup: reads the f32 accumulator out of TMEM, casts it to
  bf16, writes it transposed into SMEM and copies the group's rows out to GMEM
  in power-of-two pieces (ragged groups do not fill whole tiles).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax
from jax._src.lib.mlir.dialects import arith, memref
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

from bench import REPO_ROOT

BLACKWELL = (10, 0)
OUT_DIR = REPO_ROOT / "tests" / "corpus" / "quantized"

# Warpgroups, and the warps of the main one.
MAIN_WG, DEQUANT_WG, STORE_WG = 0, 1, 2
MMA_WARP, W_COPY_WARP, X_COPY_WARP = 0, 1, 2
NATIVE = plgpu.Layout.TCGEN05_TMEM_NATIVE


@dataclasses.dataclass(frozen=True)
class Config:
    """One tiling of the kernel; ``block_m`` rows of x per tile, ``block_n`` columns of out."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 128
    stages: int = 2
    # The accumulator leaves TMEM in this many pieces along m.
    split_m: int = 2
    # The int4 tile is loaded with this many elements per register vector.
    load_vector: int = 8
    num_sms: int = 148

    @property
    def name(self) -> str:
        return (
            f"blackwell_int4_ragged_dot_m{self.block_m}n{self.block_n}k{self.block_k}"
            f"_s{self.stages}_split{self.split_m}_v{self.load_vector}"
        )


@dataclasses.dataclass(frozen=True)
class RowBlock:
    """Which group a tile of rows belongs to, and which of its rows are the group's."""

    group: jax.Array
    block: jax.Array  # the block of ``block_m`` rows of x the tile reads
    start: jax.Array  # the group's first row within the block
    size: jax.Array  # how many of the block's rows are the group's


def row_block(sizes: Sequence[jax.Array], block_m: int, tile: jax.Array) -> RowBlock:
    """The ``tile``-th (group, row block) pair, counting the blocks of each group in turn.

    A block that straddles two groups is visited once per group, hence
    ``M // block_m + groups - 1`` tiles. The groups are few: the loop over
    them is unrolled, selects keeping the one that holds the tile.
    """
    zero = jnp.int32(0)
    group = block = group_start = group_end = end = zero
    for g, size in enumerate(sizes):
        start, end = end, end + size
        first_block = lax.div(start, jnp.int32(block_m))
        last_block = lax.div(end - 1, jnp.int32(block_m))
        first_tile, after_tile = first_block + g, last_block + 1 + g
        here = (first_tile <= tile) & (tile < after_tile)
        group = lax.select(here, jnp.int32(g), group)
        block = lax.select(here, tile - first_tile + first_block, block)
        group_start = lax.select(here, start, group_start)
        group_end = lax.select(here, end, group_end)
    block_start = block * block_m
    first = jnp.maximum(group_start, block_start)
    last = jnp.minimum(group_end, block_start + block_m)
    return RowBlock(group, block, first - block_start, jnp.maximum(last - first, zero))


def scaled(scales: jax.Array, w: jax.Array) -> jax.Array:
    """``w`` (bf16, TMEM-native layout) with row ``i`` times ``scales[i]`` (an SMEM ref).

    Written with ``inline_mgpu``, as the libraries do: per element of every
    register, an extract, a scalar load of the row's scale, a multiply and an
    insert (Mosaic GPU's ``foreach``).
    """

    @plgpu.inline_mgpu(
        arg_types=(plgpu.RefType(), NATIVE),
        return_type=plgpu.ShapeDtypeStruct(w.shape, scales.dtype, NATIVE),
    )
    def times_row_scale(_, scales_smem, tile):
        def one(element, index):
            return arith.mulf(memref.load(scales_smem, (index[0],)), element)

        return tile.foreach(one, create_array=True)

    return times_row_scale(scales, w)


def quantized_ragged_dot(
    x: jax.Array,
    w: jax.Array,
    w_scales: jax.Array,
    group_sizes: jax.Array,
    config: Config,
) -> jax.Array:
    """``x`` (M, K) bf16, ``w`` (G, N, K) int4, ``w_scales`` (G, K // quant_k, N) bf16."""
    m, k = x.shape
    groups, n, _ = w.shape
    quant_k = k // w_scales.shape[1]
    block_m, block_n, block_k = config.block_m, config.block_n, config.block_k
    stages, split_m = config.stages, config.split_m
    m_tiles = m // block_m + groups - 1
    n_tiles = n // block_n
    k_steps = k // block_k

    x_swizzle = plgpu.find_swizzle(block_k * 16)
    w_swizzle = plgpu.find_swizzle(block_k * 4)

    def body(x_gmem, w_gmem, scales_gmem, sizes_gmem, out_gmem, *scratch):
        (x_smem, w_smem, scales_smem, w_tmem, acc_tmem, out_smem) = scratch[:6]
        (x_ready, w_ready, w_free, w_dequantized, w_used, x_used, mma_done, acc_free) = scratch[6:]
        sizes = [sizes_gmem[g] for g in range(groups)]
        wg = lax.axis_index("wg")

        @plgpu.nd_loop((m_tiles * n_tiles,), collective_axes="sm", init_carry=0)
        def tiles(loop: plgpu.NDLoopInfo, carry: jax.Array) -> jax.Array:
            done = carry
            (linear,) = loop.index
            m_tile, n_tile = plgpu.planar_snake(linear, (m_tiles, n_tiles), 1, 8)
            info = row_block(sizes, block_m, m_tile)
            rows = pl.ds(info.block * block_m, block_m)
            cols = pl.ds(n_tile * block_n, block_n)

            @pl.when(info.size > 0)
            def _tile():
                @pl.when(wg == MAIN_WG)
                def _main():
                    @plgpu.warp_map
                    def _per_warp(warp):
                        @pl.when(warp == W_COPY_WARP)
                        def _copy_w():
                            def step(ki, _):
                                slot = lax.rem(ki, stages)

                                @pl.when((ki >= stages) | (done > 0))
                                def _():
                                    plgpu.barrier_wait(w_free.at[slot])

                                plgpu.copy_gmem_to_smem(
                                    w_gmem.at[info.group, cols, pl.ds(ki * block_k, block_k)],
                                    w_smem.at[slot],
                                    w_ready.at[slot],
                                )
                                plgpu.copy_gmem_to_smem(
                                    scales_gmem.at[
                                        info.group, lax.div(ki * block_k, quant_k), cols
                                    ],
                                    scales_smem.at[slot],
                                    w_ready.at[slot],
                                )

                            lax.fori_loop(0, k_steps, step, None)

                        @pl.when(warp == X_COPY_WARP)
                        def _copy_x():
                            def step(ki, _):
                                slot = lax.rem(ki, stages)

                                @pl.when((ki >= stages) | (done > 0))
                                def _():
                                    plgpu.barrier_wait(x_used.at[slot])

                                plgpu.copy_gmem_to_smem(
                                    x_gmem.at[rows, pl.ds(ki * block_k, block_k)],
                                    x_smem.at[slot],
                                    x_ready.at[slot],
                                )

                            lax.fori_loop(0, k_steps, step, None)

                        @pl.when(warp == MMA_WARP)
                        def _mma():
                            @pl.when(done > 0)
                            def _():
                                plgpu.barrier_wait(acc_free)

                            def step(ki, _):
                                slot = lax.rem(ki, stages)
                                plgpu.barrier_wait(w_dequantized.at[slot])
                                plgpu.barrier_wait(x_ready.at[slot])
                                plgpu.tcgen05_mma(
                                    acc_tmem,
                                    w_tmem.at[:, pl.ds(slot * block_k, block_k)],
                                    x_smem.at[slot].T,
                                    x_used.at[slot],
                                    accumulate=ki > 0,
                                )
                                plgpu.tcgen05_commit_arrive(w_used.at[slot])

                                @pl.when(ki >= k_steps - 1)
                                def _():
                                    plgpu.tcgen05_commit_arrive(mma_done)

                            lax.fori_loop(0, k_steps, step, None)

                @pl.when(wg == DEQUANT_WG)
                def _dequantize():
                    def step(ki, _):
                        slot = lax.rem(ki, stages)
                        plgpu.barrier_wait(w_ready.at[slot])
                        packed = plgpu.load(
                            w_smem.at[slot], layout=NATIVE(config.load_vector), optimized=False
                        )
                        tile = plgpu.layout_cast(packed.astype(jnp.bfloat16), NATIVE)
                        tile = scaled(scales_smem.at[slot], tile)

                        @pl.when((ki >= stages) | (done > 0))
                        def _():
                            plgpu.barrier_wait(w_used.at[slot])

                        plgpu.async_store_tmem(w_tmem.at[:, pl.ds(slot * block_k, block_k)], tile)
                        plgpu.commit_tmem()
                        plgpu.barrier_arrive(w_free.at[slot])
                        plgpu.barrier_arrive(w_dequantized.at[slot])

                    lax.fori_loop(0, k_steps, step, None)

                @pl.when(wg == STORE_WG)
                def _store():
                    plgpu.barrier_wait(mma_done)
                    piece = block_m // split_m

                    def to_smem(mi, _):
                        acc = plgpu.async_load_tmem(acc_tmem.at[:, pl.ds(mi * piece, piece)])
                        plgpu.wait_load_tmem()

                        @pl.when(mi == split_m - 1)
                        def _():
                            plgpu.barrier_arrive(acc_free)

                        out_smem.at[mi].T[...] = plgpu.layout_cast(
                            acc.astype(out_smem.dtype), plgpu.Layout.TCGEN05_TRANSPOSED
                        )
                        plgpu.commit_smem()

                    lax.fori_loop(0, split_m, to_smem, None)

                    def to_gmem(mi, _):
                        start = lax.max(info.start, mi * piece)
                        end = lax.min(info.start + info.size, (mi + 1) * piece)

                        @pl.when(end > start)
                        def _():
                            length = end - start
                            local = start - mi * piece
                            offset = 0
                            size = 1 << (min(piece, m).bit_length() - 1)
                            while size > 0:

                                @pl.when(length & size != 0)
                                def _(offset=offset, size=size):
                                    plgpu.copy_smem_to_gmem(
                                        out_smem.at[mi, pl.ds(local + offset, size)],
                                        out_gmem.at[
                                            pl.ds(info.block * block_m + start + offset, size),
                                            cols,
                                        ],
                                        commit_group=False,
                                    )

                                offset += length & size
                                size //= 2
                            plgpu.commit_smem_to_gmem_group()
                            plgpu.wait_smem_to_gmem(0, wait_read_only=True)

                    lax.fori_loop(0, split_m, to_gmem, None)

            return done + (info.size > 0)

    def entry(*refs):
        scratch = (
            plgpu.SMEM(
                (stages, block_m, block_k),
                jnp.bfloat16,
                transforms=(
                    plgpu.TilingTransform((8, x_swizzle // 2)),
                    plgpu.SwizzleTransform(x_swizzle),
                ),
            ),
            plgpu.SMEM(
                (stages, block_n, block_k),
                jnp.int4,
                transforms=(
                    plgpu.TilingTransform((8, w_swizzle * 2)),
                    plgpu.SwizzleTransform(w_swizzle),
                ),
            ),
            plgpu.SMEM((stages, block_n), jnp.bfloat16),
            plgpu.TMEM((block_n, stages * block_k), jnp.bfloat16, packed=True),
            plgpu.TMEM((block_n, block_m), jnp.float32),
            plgpu.SMEM(
                (split_m, block_m // split_m, block_n),
                jnp.bfloat16,
                transforms=(plgpu.TilingTransform((1, 64)), plgpu.SwizzleTransform(128)),
            ),
        )
        barriers = (
            plgpu.Barrier(num_barriers=stages),  # x_ready
            plgpu.Barrier(num_arrivals=2, num_barriers=stages),  # w_ready: w and its scales
            plgpu.Barrier(num_barriers=stages),  # w_free
            plgpu.Barrier(num_barriers=stages, orders_tensor_core=True),  # w_dequantized
            plgpu.Barrier(num_barriers=stages, orders_tensor_core=True),  # w_used
            plgpu.Barrier(num_barriers=stages, orders_tensor_core=True),  # x_used
            plgpu.Barrier(orders_tensor_core=True),  # mma_done
            plgpu.Barrier(orders_tensor_core=True),  # acc_free
        )
        pl.run_scoped(lambda *s: body(*refs, *s), *scratch, *barriers, collective_axes="wg")

    kernel = plgpu.kernel(
        entry,
        out_type=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
        num_threads=3,
        thread_name="wg",
        grid=(config.num_sms,),
        grid_names=("sm",),
        kernel_name=config.name,
        compiler_params=plgpu.CompilerParams(
            approx_math=True,
            unsafe_no_auto_barriers=True,
            lowering_semantics=plgpu.LoweringSemantics.Warpgroup,
        ),
    )
    return kernel(x, w, w_scales, group_sizes)


# The configurations captured: the shapes a library's autotuner tries.
CONFIGS: tuple[Config, ...] = (
    Config(block_k=64, stages=4),
    Config(block_k=128, stages=2),
    Config(block_k=128, stages=4, split_m=4),
    Config(block_k=128, stages=2, load_vector=4),
    Config(block_k=256, stages=2),
)
# Problem: 8 groups of experts, 4096 tokens, K=2048 (quantized by 128 rows), N=4096.
GROUPS, M, K, N, QUANT_K = 8, 4096, 2048, 4096, 128


def arguments() -> tuple[jax.ShapeDtypeStruct, ...]:
    return (
        jax.ShapeDtypeStruct((M, K), jnp.bfloat16),
        jax.ShapeDtypeStruct((GROUPS, N, K), jnp.int4),
        jax.ShapeDtypeStruct((GROUPS, K // QUANT_K, N), jnp.bfloat16),
        jax.ShapeDtypeStruct((GROUPS,), jnp.int32),
    )


def capture_all(out_dir: Path, configs: Sequence[Config] = CONFIGS) -> list[Path]:
    """Captures every configuration's module into ``out_dir`` (and its ``index.json``)."""
    from smalto.jax.capture import capture

    out_dir.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict[str, object]] = {}
    written = []
    for config in configs:

        def run(x, w, s, g, config=config):
            return quantized_ragged_dot(x, w, s, g, config)

        [module] = capture(run, *arguments(), arch=BLACKWELL, by="jax")
        path = out_dir / f"{config.name}.mlir"
        # Locations name this file relative to the repository, not this checkout.
        path.write_text(module.text.replace(f'"{REPO_ROOT}/', '"'), encoding="utf-8")
        index[config.name] = {
            "arch": list(BLACKWELL),
            "source": "bench/quantized_ragged_dot.py",
            "jax_infer_ok": module.ok,
        }
        written.append(path)
    (out_dir / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quantized_ragged_dot")
    parser.add_argument("-o", type=Path, default=OUT_DIR, help="folder to write the modules to")
    args = parser.parse_args(argv)
    for path in capture_all(args.o):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
