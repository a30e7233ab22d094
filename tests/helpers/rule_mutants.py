"""Deliberately wrong rules: what the agreement test (``tests/rules``) must catch.

Each mutant is one textual change to a module of ``smalto/rules/`` (the text
must occur there exactly once), loosening or tightening one rule without its
check. ``applied`` runs the changed module's text in place of the real one's
for the duration of a ``with`` block: its rules register again over the real
ones (``smalto.rules.RULES``), and its functions replace the real module's, so
that the module's other code calls them too; everything is put back after.
``tests/rules/test_rule_mutants.py`` asserts that the agreement kit finds a
problem with each (docs/testing.md lists them and the tests that catch them).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class RuleMutant:
    name: str
    why: str  # what is wrong, and what the lowering or JAX does instead
    path: str  # the rule's module, from the repository root
    old: str  # text of the real module, found exactly once
    new: str
    ops: tuple[str, ...]  # the ops whose agreement cases must catch it


def mutated_source(mutant: RuleMutant) -> str:
    source = (ROOT / mutant.path).read_text()
    count = source.count(mutant.old)
    assert count == 1, f"{mutant.name}: {mutant.old!r} occurs {count} times in {mutant.path}"
    return source.replace(mutant.old, mutant.new)


@contextmanager
def applied(mutant: RuleMutant) -> Iterator[None]:
    """``mutant``'s rules in force, in this process, until the block ends."""
    from smalto.rules import RULES

    path = ROOT / mutant.path
    name = ".".join(Path(mutant.path).with_suffix("").parts)
    name = name.removesuffix(".__init__")
    real = importlib.import_module(name)
    rules = dict(RULES)
    saved = dict(vars(real))
    saved_methods: list[tuple[type, str, object]] = []
    mutated = types.ModuleType(name)
    mutated.__dict__.update(__file__=str(path), __package__=real.__package__)
    if path.name == "__init__.py":
        mutated.__dict__["__path__"] = real.__path__
    try:
        exec(compile(mutated_source(mutant), str(path), "exec"), mutated.__dict__)
        for attribute, value in vars(mutated).items():
            if isinstance(value, types.FunctionType) and value.__module__ == name:
                setattr(real, attribute, value)
            elif isinstance(value, type) and isinstance(saved.get(attribute), type):
                # A class's methods go onto the real class, which its instances share.
                cls = saved[attribute]
                assert isinstance(cls, type)
                for method, function in vars(value).items():
                    if isinstance(function, types.FunctionType):
                        saved_methods.append((cls, method, vars(cls)[method]))
                        setattr(cls, method, function)
        yield
    finally:
        RULES.clear()
        RULES.update(rules)
        for cls, method, function in saved_methods:
            setattr(cls, method, function)
        for attribute in list(vars(real)):
            if attribute not in saved:
                delattr(real, attribute)
        for attribute, value in saved.items():
            setattr(real, attribute, value)


# A rule tightened without its check: a reduction refuses every source tiled over fewer
# dims than its rank, though reducing only the untiled dims lowers.
PARTIAL_TILING_REFUSED = RuleMutant(
    "reduction_refuses_partial_tilings",
    "a reduction no longer takes a tiling of the minor dims when it reduces only the major "
    "ones (which reduce within each thread)",
    "smalto/rules/vector.py",
    "ctx.require(FullyTiled(Var(source), rank, op.id, dims))",
    "ctx.require(FullyTiled(Var(source), rank, op.id))",
    ("vector.multi_reduction",),
)

RULE_MUTANTS = [
    RuleMutant(
        "multi_reduction_takes_a_strided_source",
        "a multi-reduction accepts a strided source (JAX's lowering reduces tiled sources "
        "only); over a leading dim whose trailing dims hold whole thread vectors the "
        "strided layout reduces, so the solver then takes it",
        "smalto/rules/vector.py",
        "ctx.not_of_kind(source, op, LayoutKind.STRIDED, LayoutKind.SPLAT)",
        "ctx.not_of_kind(source, op, LayoutKind.SPLAT)",
        ("vector.multi_reduction",),
    ),
    RuleMutant(
        "reducing_tmem_load_without_tmem_native",
        "a reducing TMEM load no longer requires the TMEM-native layout: the solver keeps "
        "TCGEN05, whose fused reduction JAX's lowering rejects",
        "smalto/rules/tmem.py",
        'ctx.fix(dest, Reg(hl.TMEM_NATIVE), op, "the loaded value of a reducing load")',
        "pass",
        ("mosaic_gpu.async_load_tmem",),
    ),
    RuleMutant(
        "non_strict_relayouts_between_ops",
        "the producer-to-consumer relayouts are not strict: the solver converts a tiled "
        "value between ops where JAX's rules convert only a splat (so its answers differ "
        "from JAX's)",
        "smalto/rules/__init__.py",
        "out.append(Relayout(this, exprs[target], bitwidth, True, user))",
        "out.append(Relayout(this, exprs[target], bitwidth, False, user))",
        ("mosaic_gpu.layout_cast",),
    ),
    RuleMutant(
        "slice_offsets_off_tile_boundaries",
        "an extracted slice no longer needs its offsets on tile boundaries",
        "smalto/rules/vector.py",
        "ctx.require(Divides(Var(source), offsets, op.id), Equal(Var(source), Var(result), op.id))",
        "ctx.require(Equal(Var(source), Var(result), op.id))",
        ("vector.extract_strided_slice",),
    ),
    RuleMutant(
        "window_ignores_a_run_time_offset",
        "a window at a run-time offset is taken as if the offset were a multiple of its size",
        "smalto/rules/memref.py",
        "divisor = ctx.divisibility.known_divisor(divisor, offset_value)",
        "pass",
        ("memref.subview",),
    ),
    RuleMutant(
        "m64_mma_b_tile_straddles_lane_groups",
        "a tcgen05 MMA with M = 64 no longer keeps B's tile within a lane group of N / 2",
        "smalto/rules/tmem.py",
        "ctx.require(Divides(Var(b), tile, op.id))",
        "pass",
        ("mosaic_gpu.tcgen05_mma",),
    ),
    RuleMutant(
        "sub_byte_conversion_without_whole_bytes",
        "a conversion into 4-bit elements no longer needs whole bytes in each register",
        "smalto/rules/arith.py",
        "ctx.require(RegisterBits(Var(var), bitwidth, 8, op.id))",
        "pass",
        ("arith.trunci",),
    ),
    RuleMutant(
        "sub_byte_packing_from_a_splat",
        "an i4 -> i8 conversion takes a splat, whose scalar registers the lowering cannot pack",
        "smalto/rules/arith.py",
        "# (A splat producer still converts to a tiled layout at this use.)\n"
        "            ctx.not_of_kind(var, op, LayoutKind.SPLAT)",
        "pass",
        ("arith.extsi", "arith.sitofp"),
    ),
    RuleMutant(
        "aliased_slices_apart",
        "slices with one alias id are no longer one ref: each takes its own transforms",
        "smalto/rules/context.py",
        "var = self.aliases.get(key)",
        "var = None",
        ("mosaic_gpu.slice_smem",),
    ),
    RuleMutant(
        "collective_m64_b_scales_in_the_plain_layout",
        "B scales of a collective M = 64 MMA copied into the plain scales layout",
        "smalto/rules/tmem.py",
        "if source_shape == (1, k_tiles, 64, 16):",
        "if False:",
        ("mosaic_gpu.async_store_scales_smem_to_tmem",),
    ),
    RuleMutant(
        "wgmma_smem_a_tiled_apart_from_b",
        "a wgmma no longer requires A from SMEM tiled and swizzled as B",
        "smalto/rules/mosaic_gpu.py",
        "ctx.require(Equal(Var(a), Var(b) if same else Transpose(Var(b), (1, 0)), op.id))",
        "pass",
        ("mosaic_gpu.wgmma",),
    ),
    RuleMutant(
        "broadcast_along_the_kept_dims",
        "a broadcast reduces its result over the dims it keeps, not those it adds (a row "
        "vector taken for a column vector)",
        "smalto/rules/mosaic_gpu.py",
        "added = [d for d in range(len(dst_shape)) if d not in source_of]",
        "added = [d for d in range(len(dst_shape)) if d in source_of]",
        ("mosaic_gpu.broadcast_in_dim",),
    ),
    PARTIAL_TILING_REFUSED,
]


def _failing_tests_of_tests_rules(mutant: RuleMutant) -> list[str]:
    """The tests of ``tests/rules`` that fail with ``mutant`` written into its file (put
    back after), but the mutant test and the coverage test (which fail on any edit)."""
    import subprocess
    import sys

    path = ROOT / mutant.path
    original = path.read_text()
    mutated = mutated_source(mutant)
    try:
        path.write_text(mutated)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/rules",
                "--deselect",
                "tests/rules/test_rule_mutants.py",
                "--deselect",
                "tests/rules/test_agreement_coverage.py",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    finally:
        path.write_text(original)
    return [
        line.split()[1] for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))
    ]


if __name__ == "__main__":
    # Each mutant written into its file in turn, and all of tests/rules run on it: which
    # tests catch it (docs/testing.md lists them). Minutes: one run of tests/rules each.
    import sys

    chosen = sys.argv[1:]
    for mutant in RULE_MUTANTS:
        if chosen and mutant.name not in chosen:
            continue
        failing = _failing_tests_of_tests_rules(mutant)
        print(f"{mutant.name}: {len(failing)} failing", flush=True)
        for test in failing:
            print(f"    {test}", flush=True)
