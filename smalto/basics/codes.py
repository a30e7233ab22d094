"""The catalogue of failure codes: one stable code for each kind of kernel with no layouts.

A failed inference names its code on the diagnosis' last line (``error[SM004]: ...``),
``smalto infer --json`` gives it for each problem, ``smalto explain SM004`` prints
its entry, and ``docs/codes.md`` is made from this module (a test keeps them the same).
A code is never reused for another kind once published; new kinds get new numbers.
"""

from __future__ import annotations

import re

from smalto.basics.records import value_class

_CODE = re.compile(r"^SM\d{3}$", re.IGNORECASE)


# Each code by name: what the rules, the wording and the tools import (a bare "SM004"
# elsewhere in the package is a code no reader can find).
TWO_REGISTER_LAYOUTS = "SM001"
NO_RELAYOUT = "SM002"
REDUCTION_LAYOUT = "SM003"
NO_SMEM_PLAN = "SM004"
UNCOALESCED_GMEM = "SM005"
TMEM_LAYOUT = "SM006"
TMA_INDEX = "SM007"
LAYOUT_FOR_SHAPE = "SM008"
TWO_SMEM_TRANSFORMS = "SM009"
TMA_GATHER = "SM010"
MIXED_COLLECTIVE = "SM011"
# The code where no more specific one applies.
GENERIC = TWO_REGISTER_LAYOUTS


@value_class(frozen=True)
class Code:
    """One kind of failure: its code, a title, an example, why it fails, and the fixes."""

    code: str
    title: str
    example: str  # a Pallas kernel's lines that make it, then the message's first lines
    why: str
    fixes: tuple[str, ...]


CODES: dict[str, Code] = {
    code.code: code
    for code in (
        Code(
            TWO_REGISTER_LAYOUTS,
            "a value is required to have two different register layouts",
            """\
x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
y = plgpu.layout_cast(x, plgpu.Layout.WG_STRIDED((64, 128), vec_size=2))
out_gmem[...] = x + y

Failed to infer a possible set of layouts: expected register layouts ... to be equal""",
            "Values an elementwise op, a loop carry or a store combine share one layout; "
            "two annotations (layout casts, an MMA's result, `layout=` arguments) each fix "
            "that layout, differently, and no relayout between them is allowed where the "
            "value flows from producer to consumer. A broadcast asks its operand for its "
            "result's layout reduced along the broadcast axis: `bias[None, :]` added to a "
            "WGMMA value must be `Layout.WGMMA.reduce(0)`, so a `layout=` of `reduce(1)` on "
            "the load of `bias` is such a second layout.",
            (
                "change one `plgpu.layout_cast` target (or `layout=` argument) to the layout "
                "the other requires",
                "remove the cast that is not needed: smalto picks a layout that fits the rest",
                "where the relayout is supported (from a splat, WGMMA <-> WGMMA_TRANSPOSED), "
                "cast explicitly where the value changes hands",
            ),
        ),
        Code(
            NO_RELAYOUT,
            "a relayout no lowering performs",
            """\
acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))    # WGMMA
acc = plgpu.layout_cast(acc, plgpu.Layout.WG_STRIDED((m, n), vec_size=2))

Failed to infer a possible set of layouts: cannot relayout from register layout ... to ...""",
            "A `plgpu.layout_cast` (or a `layout=` argument) asks for a layout the value "
            "cannot be converted to: JAX's lowering converts only from a splat, between "
            "WGMMA and WGMMA_TRANSPOSED (TCGEN05 and its transpose) for 16- and 32-bit "
            "elements, and from the WGMMA upcast layouts. Any other conversion has no code "
            "behind it.",
            (
                "cast to the layout the producer gives (a wgmma's result is WGMMA; on "
                "Blackwell a TMEM load is TCGEN05, not WGMMA)",
                "remove the cast and let inference choose",
                "produce the value in the layout you need (load it with that layout)",
            ),
        ),
        Code(
            REDUCTION_LAYOUT,
            "a reduction's layout does not match the axis it reduces",
            """\
s = jnp.sum(x, axis=1)                                       # x is WGMMA
out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))

Failed to infer a possible set of layouts: cannot relayout from register layout \
WGMMA_ROW to WGMMA_COL""",
            "Reducing a tiled layout along an axis gives that layout reduced along the same "
            "axis: `jnp.sum(x, axis=1)` of a WGMMA value is `Layout.WGMMA.reduce(1)` "
            "(WGMMA_ROW: one value per row). A cast, a broadcast or a store that wants the "
            "other axis's layout (`reduce(0)`, WGMMA_COL) asks for a relayout no lowering "
            "performs.",
            (
                "cast to `.reduce(axis)` with the axis the reduction removes",
                "remove the cast: the reduction's own layout is the right one",
                "where a broadcast wants the other axis (`rs[None, :]` of row sums), the "
                "reduction and the broadcast disagree: say which you meant (the reduction's "
                "axis or the broadcast's; either changes what the kernel computes, so smalto "
                "offers both and makes neither)",
            ),
        ),
        Code(
            NO_SMEM_PLAN,
            "no SMEM transfer plan for the ref's transforms and the value's layout",
            """\
plgpu.SMEM((64, 128), jnp.float16, transforms=(plgpu.TilingTransform((8, 64)),))
...
out_smem[...] = acc.astype(out_smem.dtype)                   # acc from a wgmma

Failed to infer a possible set of layouts: no optimized SMEM <-> registers transfer \
plan could be synthesized for register layout WGMMA and ref with transforms ...""",
            "A store to (or load from) SMEM in a tiled register layout needs the ref's tiling "
            "and swizzle to match how each warp's rows sit in memory; without a swizzle "
            "of the tile row's width the transfer is bank-conflicted, and an optimized "
            "transfer (the default) refuses it.",
            (
                "give the SMEM ref the transforms that fit, e.g. "
                "`transforms=(plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))` "
                "for 16-bit WGMMA values",
                "declare the ref without transforms (inference picks them)",
                "make the transfer unoptimized (`plgpu.store(ref, x, optimized=False)`): "
                "correct, slower",
            ),
        ),
        Code(
            UNCOALESCED_GMEM,
            "a GMEM transfer that cannot be coalesced",
            """\
acc = ...                                                    # a wgmma or TMEM result, f32
o_gmem[...] = acc.astype(jnp.bfloat16)                       # straight to GMEM

Failed to infer a possible set of layouts ... (JAX's lowering: no optimized transfer \
plan for the GMEM store)""",
            "An optimized GMEM load or store needs each thread to move at least 4 bytes at "
            "a time and each warp whole 32-byte sectors. A 16- or 8-bit MMA result holds "
            "2 elements per thread in a row (4 bytes only for 16-bit pairs spread over "
            "rows), and a column of a row-major table (`w_ref[:, j]`) has its elements far "
            "apart: no register layout of the value makes the transfer coalesced.",
            (
                "stage the value through SMEM (store it to a swizzled `plgpu.SMEM` ref, "
                "then `plgpu.copy_smem_to_gmem`): as fast as it gets (`smalto fix` writes "
                "it for a store or a load of a whole row-major view)",
                "or let smalto stage it through SMEM at compile time, every transfer "
                "optimized (`infer_layout(..., stage_through_smem=True)`, "
                "`--stage-through-smem`)",
                "make the transfer unoptimized where written "
                "(`plgpu.store(o_gmem, x, optimized=False)`, "
                "`plgpu.load(w_ref.at[:, j], optimized=False)`): correct, slower "
                "(`smalto fix --allow-unoptimized` does it)",
                "or let smalto make it unoptimized at compile time "
                "(`infer_layout(..., allow_unoptimized=True)`, `--allow-unoptimized`)",
            ),
        ),
        Code(
            TMEM_LAYOUT,
            "a TMEM layout the MMA or the TMEM transfer cannot take",
            """\
acc = plgpu.TMEM((128, 128), jnp.float32,
                 layout=plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128))
plgpu.tcgen05_mma(acc, a_smem, b_smem, barrier, accumulate=False)

Failed to infer a possible set of layouts. This should only happen if user-provided \
layout casts are unsatisfiable. ...""",
            "A tcgen05 MMA writes its accumulator in the TMEM layout its shape and its "
            "collective mode call for (128 rows: the default layout; M=64 in a 2-CTA "
            "cluster: the collective one), and `async_load_tmem`/`async_store_tmem` move "
            "registers to and from TMEM only between layouts that fit (TCGEN05 for the "
            "default TMEM layout). A TMEM ref declared with another layout, or registers "
            "of another layout, leave no layout for the ref.",
            (
                "declare the TMEM ref without `layout=` (`plgpu.TMEM(shape, dtype)`), or "
                "with `collective=`/`packed=` as the MMA runs",
                "load the accumulator in the layout the TMEM ref gives (TCGEN05, not WGMMA)",
            ),
        ),
        Code(
            TMA_INDEX,
            "a TMA index not known to be a multiple of the tile",
            """\
plgpu.copy_gmem_to_smem(x_gmem.at[pl.ds(i * 64, 64)], x_smem, barrier)

Failed to infer a possible set of layouts. You need to prove the divisibility of \
index 0 using pl.multiple_of.""",
            "A TMA copy into a tiled SMEM ref moves whole tiles: its offset along each "
            "tiled dimension must be a multiple of the tile. A computed offset the compiler "
            "cannot see is one leaves no tiling the copy can use.",
            (
                "state it: `pl.ds(pl.multiple_of(i * 64, 64), 64)`",
                "use a smaller tiling (`plgpu.TilingTransform`) that the offset is a multiple of",
            ),
        ),
        Code(
            LAYOUT_FOR_SHAPE,
            "a layout the value's shape or element type cannot take",
            """\
x = plgpu.layout_cast(v, plgpu.Layout.WG_STRIDED((64,), vec_size=2))    # 64 elements

Failed to infer a possible set of layouts: ...""",
            "Every register layout tiles the value's shape: strided layouts need a "
            "multiple of 128 elements (one warpgroup), tiled ones a shape their tile "
            "divides, TMEM layouts a packing the element type allows. A layout asked for "
            "(or the only ones left) does not fit the value.",
            (
                "cast to a layout that fits the shape, or remove the cast",
                "give the value a shape that fits (load it wider, or reshape it)",
            ),
        ),
        Code(
            TWO_SMEM_TRANSFORMS,
            "an SMEM ref is required to have two different sets of transforms",
            """\
a_smem: plgpu.SMEM((64, 64), jnp.float16, transforms=(plgpu.TilingTransform((8, 64)),
                                                      plgpu.SwizzleTransform(128)))
b_smem: plgpu.SMEM((64, 128), jnp.float16, transforms=(plgpu.TilingTransform((8, 64)),))
plgpu.wgmma(acc_ref, a_smem, b_smem)

Failed to infer a possible set of layouts. This should only happen if user-provided \
layout casts are unsatisfiable. ...""",
            "Refs an op reads together share their tiling and swizzle: a wgmma's two SMEM "
            "operands, one ref passed twice to a `plgpu.inline_mgpu`, the views of one ref. "
            "Each ref's `transforms=` (or an inline_mgpu's stated transforms) fixes them, "
            "differently; a wgmma also reads swizzled tiles only.",
            (
                "give the refs the same transforms, e.g. "
                "`transforms=(plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))` "
                "for 16-bit wgmma operands",
                "declare a ref without transforms: inference gives it the other's",
            ),
        ),
        Code(
            TMA_GATHER,
            "a TMA gather or scatter the hardware cannot do",
            """\
x_smem: plgpu.SMEM((64, 8), jnp.bfloat16)           # rows of 8 bf16: 16 bytes
plgpu.copy_gmem_to_smem(x_gmem.at[rows], x_smem, barrier)   # rows: a vector of indices

Failed to infer a possible set of layouts: Cannot assign layout to async load with gather \
indices since minor dim=8 is not divisible by divisor=16 bits. ...""",
            "A TMA gather (scatter) moves 4 rows at once, each 256-bit aligned in SMEM: the "
            "row it writes must be a multiple of 32 bytes (16 bf16, 8 f32). No layout or "
            "tiling changes that: the copy's shape does.",
            (
                "gather wider rows (widen the slice of the minor dim, padding the GMEM "
                "array if needed) and use the part you need",
                "copy the rows without gather indices (one copy per row, or a strided copy)",
            ),
        ),
        Code(
            MIXED_COLLECTIVE,
            "collective and 1-CTA tensor-core ops mixed in one kernel",
            """\
acc = plgpu.TMEM((128, 256), jnp.float32, collective=True)     # a 2-CTA allocation
plgpu.tcgen05_mma(acc, a_smem, b_smem, barrier, collective_axis="x")
plgpu.tcgen05_mma(acc, a_smem, b2_smem, barrier2, accumulate=True)   # 1-CTA

Failed to infer a possible set of layouts: Collective attributes are inconsistent across \
operations in the kernel. ...""",
            "A kernel's TMEM allocations and tcgen05 MMAs (and the TMEM copies and commits "
            "that go with them) are either all collective, shared by the two CTAs of a "
            "cluster, or all 1-CTA: JAX's lowering sets up the tensor memory once for the "
            "whole kernel and refuses an op of the other kind, whatever the layouts. "
            "smalto refuses such a kernel before its layouts are written.",
            (
                "give every `plgpu.tcgen05_mma` on a collective TMEM ref `collective_axis=` "
                "(the cluster axis the TMEM ref is shared over)",
                "or declare the TMEM refs without `collective=True` and run the MMAs 1-CTA",
            ),
        ),
    )
}


def code_line(code: str) -> str:
    """``error[SM004]: <its title> (`smalto explain SM004`)``: the last line of a problem."""
    return f"error[{code}]: {CODES[code].title} (`smalto explain {code}`)"


def is_code(text: str) -> bool:
    """Whether ``text`` names a code (``SM004``, any case), known or not."""
    return bool(_CODE.match(text))


def entry_text(code: str) -> str:
    """A code's entry, for the terminal (``smalto explain SM004``)."""
    found = CODES[code.upper()]
    lines = [f"{found.code}: {found.title}", "", "Example:", ""]
    lines += [f"    {line}" if line else "" for line in found.example.splitlines()]
    lines += ["", "Why:", "", *_wrapped(found.why), "", "Fixes:", ""]
    lines += [f"  - {fix}" for fix in found.fixes]
    return "\n".join(lines) + "\n"


def catalogue_markdown() -> str:
    """``docs/codes.md``: every code's entry."""
    lines = [
        "# Failure codes",
        "",
        "<!-- Made from smalto/basics/codes.py (`python -m smalto.basics.codes > docs/codes.md`); "
        "tests/diagnosis/test_codes.py checks they agree. -->",
        "",
        "Each kind of kernel with no layouts has a stable code. smalto names it on the "
        "last line of the diagnosis (`error[SM004]: ...`), `smalto infer --json` gives "
        "it for each problem (`code`), and `smalto explain SM004` prints the entry "
        "below. `smalto fix` (docs/fix.md) applies the verified fixes.",
        "",
        "| code | kind |",
        "| --- | --- |",
        *(f"| [{c.code}](#{c.code.lower()}) | {c.title} |" for c in CODES.values()),
        "",
    ]
    for found in CODES.values():
        lines += [f"## {found.code}", "", f"**{found.title}**", "", "```"]
        lines += [*found.example.splitlines(), "```", "", found.why, "", "Fixes:", ""]
        lines += [f"- {fix}" for fix in found.fixes]
        lines.append("")
    return "\n".join(lines)


def _wrapped(text: str, width: int = 88) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="  ")


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
