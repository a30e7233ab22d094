"""Deliberately wrong rules and checks: what the agreement test (``tests/rules``) must catch.

Each mutant is one textual change to a module of ``smalto/rules/`` (the text
must occur there exactly once), loosening or tightening one rule without its
check (``RULE_MUTANTS``), or to a module of ``smalto/check/``, loosening one check
without its rule (``CHECK_MUTANTS``). ``applied`` runs the changed module's text
in place of the real one's for the duration of a ``with`` block: its rules (or checks)
register again over the real ones (``smalto.rules.RULES``, ``smalto.check.core.RULES``),
and its functions replace the real module's, so that the module's other code calls
them too; everything is put back after.
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
    """``mutant``'s rules (or checks) in force, in this process, until the block ends."""
    from smalto.check.core import RULES as CHECKS
    from smalto.rules import RULES

    path = ROOT / mutant.path
    name = ".".join(Path(mutant.path).with_suffix("").parts)
    name = name.removesuffix(".__init__")
    real = importlib.import_module(name)
    rules, checks = dict(RULES), dict(CHECKS)
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
        CHECKS.clear()
        CHECKS.update(checks)
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

# Checks loosened without their rules: the checker (smalto/check) takes a layout the op's
# rule refuses, and JAX's lowering too. The agreement kit must find each: the solver
# refuses the layout, the checker accepts the hand-annotated module. Where the op's
# operand comes from a producer that relayouts it for free (a splat), the generator asks
# the kind of the op itself (``Candidate.at_op``), or the check would never be asked.
# (Loosenings the checker's other requirements still refuse are no mutants: a reduction
# of a splat or of a strided slice, an asynchronous store of a strided value, a splat
# load all fail on another requirement of the same op.)
CHECK_MUTANTS = [
    RuleMutant(
        "check_reduction_takes_a_strided_source",
        "the check takes a strided source of a multi-reduction (the lowering reduces tiled "
        "sources only)",
        "smalto/check/vector.py",
        "    c.not_kinds(op, IN, 0, splat=True, strided=True)\n    c.same(op, [(IN, 1), (OUT, 0)]",
        "    c.not_kinds(op, IN, 0, splat=True)\n    c.same(op, [(IN, 1), (OUT, 0)]",
        ("vector.multi_reduction",),
    ),
    RuleMutant(
        "check_reduction_takes_a_splat_source",
        "the check takes a splat source of a multi-reduction; the splat's producer would "
        "convert it for free, so only the case asked at the op finds it",
        "smalto/check/vector.py",
        "    c.not_kinds(op, IN, 0, splat=True, strided=True)\n    c.same(op, [(IN, 1), (OUT, 0)]",
        "    c.not_kinds(op, IN, 0, splat=False, strided=True)\n    c.same(op, [(IN, 1), (OUT, 0)]",
        ("vector.multi_reduction",),
    ),
    RuleMutant(
        "check_slice_offsets_off_tile_boundaries",
        "the check no longer needs a slice's offsets on tile boundaries",
        "smalto/check/vector.py",
        'c.divides(op, IN, 0, offsets, "the slice offsets")',
        "pass",
        ("vector.extract_strided_slice",),
    ),
    RuleMutant(
        "check_sub_byte_conversion_without_whole_bytes",
        "the check no longer needs whole bytes in each register of a conversion into 4-bit "
        "elements",
        "smalto/check/arith.py",
        "if bitwidth and layout is not None and not hl.registers_hold_bits(layout, bitwidth, 8):",
        "if False:",
        ("arith.trunci",),
    ),
    RuleMutant(
        "check_sub_byte_packing_from_a_splat",
        "the check takes a splat into an i4 -> i8 conversion, whose registers it packs",
        "smalto/check/arith.py",
        "            and layout.is_splat\n",
        "            and False\n",
        ("arith.extsi", "arith.sitofp"),
    ),
    RuleMutant(
        "check_scalar_broadcast_in_any_layout",
        "the check takes a scalar broadcast in any layout (the lowering makes a splat)",
        "smalto/check/vector.py",
        'c.expect(op, OUT, 0, hl.splat(c.value(op, OUT, 0).shape), "a broadcast scalar")',
        "pass",
        ("vector.broadcast",),
    ),
    RuleMutant(
        "check_dense_constant_as_a_splat",
        "the check takes a dense constant as a splat",
        "smalto/check/arith.py",
        "    else:\n        c.not_kinds(op, OUT, 0, splat=True, strided=False)",
        "    else:\n        pass",
        ("arith.constant",),
    ),
    RuleMutant(
        "check_splat_constant_in_any_layout",
        "the check takes a splat constant in a tiled or strided layout",
        "smalto/check/arith.py",
        'c.expect(op, OUT, 0, hl.splat(shape), "a splat constant")',
        "pass",
        ("arith.constant",),
    ),
    RuleMutant(
        "check_scalar_extracted_from_any_layout",
        "the check takes a scalar extracted from a tiled or strided vector",
        "smalto/check/vector.py",
        'c.expect(op, IN, 0, hl.splat(source_shape), "a vector a scalar is extracted from")',
        "pass",
        ("vector.extract",),
    ),
    RuleMutant(
        "check_iota_as_a_splat",
        "the check takes an iota (or a multimem reduction) as a splat",
        "smalto/check/mosaic_gpu.py",
        "def _not_splat_result(c: Checker, op: Op) -> None:\n"
        "    c.not_kinds(op, OUT, 0, splat=True, strided=False)",
        "def _not_splat_result(c: Checker, op: Op) -> None:\n    pass",
        ("mosaic_gpu.broadcasted_iota",),
    ),
    RuleMutant(
        "check_window_ignores_its_known_divisors",
        "the check takes a window's tiling whatever its sizes and offsets divide",
        "smalto/check/memref.py",
        'c.divides(op, IN, 0, multiple, "the window\'s sizes and offsets, known divisors")',
        "pass",
        ("memref.subview",),
    ),
    RuleMutant(
        "check_m64_mma_b_tile_straddles_lane_groups",
        "the check no longer keeps B's tile of an M = 64 tcgen05 MMA within a lane group",
        "smalto/check/tmem.py",
        'c.divides(op, IN, 2, tile, "the half-N lane group tile")',
        "pass",
        ("mosaic_gpu.tcgen05_mma",),
    ),
    RuleMutant(
        "check_elementwise_operands_apart",
        "the check takes an elementwise op's operands and result in different layouts",
        "smalto/check/arith.py",
        'c.same(op, c.vector_sites(op), "an elementwise op keeps one layout")',
        "pass",
        ("arith.addf",),
    ),
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
    for mutant in [*RULE_MUTANTS, *CHECK_MUTANTS]:
        if chosen and mutant.name not in chosen:
            continue
        failing = _failing_tests_of_tests_rules(mutant)
        print(f"{mutant.name}: {len(failing)} failing", flush=True)
        for test in failing:
            print(f"    {test}", flush=True)
