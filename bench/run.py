"""Time smalto against JAX's layout-inference pass and against the IR floor.

``python -m bench.run [FILES...] [--repeat N] [--jax-repeat N] [--json OUT]
[--markdown OUT [--append]]``

For each module (default: every file of ``../shared/corpus/kernels/``, else
of ``tests/corpus/kernels/``), in this one process, on separately parsed
copies of the same text (parsing is never timed), it measures

(a) JAX's ``layout_inference.infer_layout``,
(b) ``smalto.infer_layout``,
(c) the **IR floor**: one pre-order walk over every op that reads each op's
    operand and result types and sets, from ready-made attribute objects, the
    very layout attributes smalto wrote: the least any pass must do through
    the MLIR bindings,
(d) the **read**: one pre-order walk that only gathers what any pass must
    learn of the module (each op's name, its operands' identities, its
    results' types) into Python lists, with no analysis: how much of the
    floor-to-smalto gap is merely reading the dataflow through the bindings.

Each figure is the median over ``--repeat`` runs; before them one untimed
run of each pass gives the attributes to compare (smalto's against JAX's) and
the attributes the floor writes. Peak Python memory (``tracemalloc``: the
Python heap only, not MLIR's own allocations) is taken on one more run of each
pass.

``--fuel-exhausted`` runs smalto alone (JAX's pass takes minutes there) on
the ``fuel_exhausted/`` kernels and reports per kernel the time and the
outcome: solved, or the first line of the error.

The architecture of a module is the corpus ``index.json``'s when the file
lies in a corpus, else the module's ``mosaic_gpu.arch_major/arch_minor``
attributes, else 9.0.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

import reference
from jax._src.lib.mlir import ir

import smalto
from bench import REPO_ROOT
from smalto.basics.mlir import module_arch

Arch = tuple[int, int]
DEFAULT_ARCH: Arch = (9, 0)
DEFAULT_REPEAT = 5
# Only for --fuel-exhausted: a kernel whose first run takes longer than this
# is not run again (a run that exhausts the fuel can take many seconds).
REPEAT_BELOW_SECONDS = 1.0

Clock = Callable[[], float]
# "cpu" (the default) is this process's CPU time: on a shared machine it is
# far less disturbed by other processes than wall-clock time, and the passes
# timed here are single-threaded. "wall" is wall-clock time.
CLOCKS: dict[str, Clock] = {"cpu": time.process_time, "wall": time.perf_counter}
DEFAULT_CLOCK = "cpu"

# One entry per op in pre-order: the layout attributes to set on it.
AttributePlan = list[tuple[tuple[str, ir.Attribute], ...]]


# --------------------------------------------------------------------------
# Inputs


def corpus_dir(folder: str) -> Path:
    """``folder`` of the shared corpus when present, else of the bundled sample."""
    root = reference.corpus_root()
    if root is not None and (root / folder).is_dir():
        return root / folder
    return reference.BUNDLED_ROOT / folder


def default_files(folder: str) -> list[Path]:
    return sorted(corpus_dir(folder).glob("*.mlir"))


def kernel_files(given: list[Path], prog: str) -> list[Path] | None:
    """``given``, else the corpus kernels; None, with an error on stderr, if one is missing."""
    files = given or default_files("kernels")
    missing = [str(f) for f in files if not f.is_file()]
    if missing or not files:
        print(f"{prog}: error: no such file: {', '.join(missing) or '(none)'}", file=sys.stderr)
        return None
    return files


_INDEXES: dict[Path, dict[str, Any]] = {}


def _index(root: Path) -> dict[str, Any]:
    if root not in _INDEXES:
        _INDEXES[root] = json.loads((root / "index.json").read_text())
    return _INDEXES[root]


def _index_entry(path: Path) -> dict[str, Any] | None:
    """The corpus ``index.json`` entry of ``path``, if it lies in a corpus."""
    resolved = path.resolve()
    for root in resolved.parents:
        if (root / "index.json").is_file():
            key = resolved.relative_to(root).with_suffix("").as_posix()
            entry = _index(root).get(key)
            return entry if isinstance(entry, dict) else None
    return None


def index_arch(path: Path) -> Arch | None:
    """The arch the corpus index gives ``path``; None outside a corpus."""
    entry = _index_entry(path)
    if entry is None or "arch" not in entry:
        return None
    return (int(entry["arch"][0]), int(entry["arch"][1]))


def display_name(path: Path) -> str:
    return path.stem


# --------------------------------------------------------------------------
# The three things timed


def run_jax(module: ir.Module, arch: Arch) -> None:
    from jax.experimental.mosaic.gpu import layout_inference

    layout_inference.infer_layout(module, arch=arch)


def run_smalto(module: ir.Module, arch: Arch, fuel: int = smalto.DEFAULT_FUEL) -> None:
    smalto.infer_layout(module, fuel=fuel, arch=arch)


def attribute_plan(module: ir.Module) -> AttributePlan:
    """The layout attributes of an annotated module, per op in pre-order."""
    plan: AttributePlan = []
    names = reference.LAYOUT_ATTRIBUTE_NAMES

    def visit(op: ir.Operation) -> ir.WalkResult:
        attributes = op.attributes
        plan.append(tuple((name, attributes[name]) for name in names if name in attributes))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return plan


def floor_walk(module: ir.Module, plan: AttributePlan) -> None:
    """The IR floor: read every op's operand and result types, set ``plan``'s attributes.

    ``module`` must be a fresh parse of the text ``plan`` was taken from, in
    the same context (the attribute objects are reused, not rebuilt).
    """
    entries = iter(plan)

    def visit(op: ir.Operation) -> ir.WalkResult:
        [o.type for o in op.operands]
        [r.type for r in op.results]
        attributes = op.attributes
        for name, attribute in next(entries):
            attributes[name] = attribute
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def read_walk(module: ir.Module) -> list[tuple[str, tuple[int | None, ...], list[ir.Type]]]:
    """The least any layout pass must read: per op, its name, its operands' identities and
    its results' types, gathered into Python lists by one pre-order walk; no analysis.

    Beside the floor (which reads types but keeps nothing), this shows what
    merely learning the module's dataflow through the bindings costs.
    """
    ids: dict[int, int] = {}
    get = ids.get
    ops: list[tuple[str, tuple[int | None, ...], list[ir.Type]]] = []
    advance = ir.WalkResult.ADVANCE

    def visit(op: ir.Operation) -> ir.WalkResult:
        operands = tuple(map(get, map(hash, op.operands)))
        types = []
        for r in op.results:
            types.append(r.type)
            ids[hash(r)] = len(ids)
        ops.append((op.name, operands, types))
        return advance

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ops


def answer_fingerprint(attributes: reference.Attributes) -> str:
    """A short digest of a module's layout attributes (``reference.layout_attributes``).

    Equal digests mean identical answers: it compares smalto's answers before
    and after a change on kernels too large to run JAX's pass on.
    """
    digest = hashlib.sha256(json.dumps(attributes, sort_keys=True).encode())
    return digest.hexdigest()[:12]


def count_ops(module: ir.Module) -> int:
    count = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return count


def timed(
    run: Callable[[ir.Module], None], module: ir.Module, clock: Clock = time.process_time
) -> float:
    """Seconds ``run(module)`` takes by ``clock`` (earlier runs' garbage collected first)."""
    gc.collect()
    start = clock()
    run(module)
    return clock() - start


def peak_kib(run: Callable[[ir.Module], None], module: ir.Module) -> float:
    """Peak Python-heap allocation (KiB) during ``run(module)``, by ``tracemalloc``."""
    gc.collect()
    tracemalloc.start()
    try:
        run(module)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1024


def _error_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


# --------------------------------------------------------------------------
# Corpus kernels: JAX vs smalto vs floor


@dataclasses.dataclass
class ModuleResult:
    """One module's figures; times in milliseconds (medians), memory in KiB."""

    name: str
    path: str
    arch: Arch
    ops: int
    jax_ms: float | None = None
    smalto_ms: float | None = None
    floor_ms: float | None = None
    read_ms: float | None = None  # read_walk: learning the module's dataflow, nothing more
    jax_peak_kib: float | None = None
    smalto_peak_kib: float | None = None
    identical: bool | None = None  # smalto's attributes == JAX's
    error: str | None = None
    jax_runs: int = 0  # samples behind jax_ms
    answer: str | None = None  # fingerprint of smalto's attributes (``answer_fingerprint``)

    @property
    def jax_over_smalto(self) -> float | None:
        if self.jax_ms is None or not self.smalto_ms:
            return None
        return self.jax_ms / self.smalto_ms

    @property
    def read_over_floor(self) -> float | None:
        if self.read_ms is None or not self.floor_ms:
            return None
        return self.read_ms / self.floor_ms

    @property
    def smalto_over_floor(self) -> float | None:
        if self.smalto_ms is None or not self.floor_ms:
            return None
        return self.smalto_ms / self.floor_ms


def measure_module(
    text: str,
    arch: Arch | None,
    *,
    name: str,
    path: str = "",
    repeat: int = DEFAULT_REPEAT,
    jax_repeat: int | None = None,
    memory: bool = True,
    clock: str = DEFAULT_CLOCK,
    jax_slow_seconds: float | None = None,
) -> ModuleResult:
    """Times JAX, smalto and the floor on separately parsed copies of ``text``.

    ``arch`` None means the module's own (else 9.0). All copies are parsed in
    one context so that the floor can reuse smalto's attribute objects. When
    ``jax_slow_seconds`` is set and JAX's untimed first run takes longer, that
    run is JAX's only sample (and its peak memory is not taken).
    """
    jax_repeat = repeat if jax_repeat is None else jax_repeat
    tick = CLOCKS[clock]
    ctx = reference.make_context()

    def fresh() -> ir.Module:
        return reference.parse(text, ctx)

    with ctx, ir.Location.unknown():
        first = fresh()
        arch = arch or module_arch(first) or DEFAULT_ARCH
        result = ModuleResult(name=name, path=path, arch=arch, ops=count_ops(first))

        def jax(m: ir.Module) -> None:
            run_jax(m, arch)

        def ours(m: ir.Module) -> None:
            run_smalto(m, arch)

        # Untimed runs: their results are compared and give the floor's plan.
        annotated = first
        try:
            ours(annotated)
        except Exception as error:  # noqa: BLE001 -- a failing module is a result
            result.error = f"smalto: {_error_line(error)}"
            return result
        plan = attribute_plan(annotated)
        ours_attributes = reference.layout_attributes(annotated)
        result.answer = answer_fingerprint(ours_attributes)

        def floor(m: ir.Module) -> None:
            floor_walk(m, plan)

        check = fresh()
        floor(check)
        if reference.layout_attributes(check) != ours_attributes:
            raise AssertionError(f"{name}: the floor walk did not reproduce smalto's attributes")
        jax_ok = jax_repeat > 0
        jax_samples: list[float] = []
        memory_jax = memory
        if jax_ok:
            reference_copy = fresh()
            try:
                first_jax_seconds = timed(jax, reference_copy, tick)
                if jax_slow_seconds is not None and first_jax_seconds > jax_slow_seconds:
                    jax_samples = [first_jax_seconds]
                    jax_repeat = 0
                    memory_jax = False
                result.identical = reference.layout_attributes(reference_copy) == ours_attributes
            except Exception as error:  # noqa: BLE001
                result.error = f"JAX: {_error_line(error)}"
                jax_ok = False
            del reference_copy

        jax_times: list[float] = list(jax_samples)
        ours_times: list[float] = []
        floor_times: list[float] = []
        read_times: list[float] = []
        for round_ in range(repeat):
            if jax_ok and round_ < jax_repeat:
                jax_times.append(timed(jax, fresh(), tick))
            ours_times.append(timed(ours, fresh(), tick))
            floor_times.append(timed(floor, fresh(), tick))
            read_times.append(timed(read_walk, fresh(), tick))
        if jax_times:
            result.jax_ms = statistics.median(jax_times) * 1e3
            result.jax_runs = len(jax_times)
        if ours_times:
            result.smalto_ms = statistics.median(ours_times) * 1e3
            result.floor_ms = statistics.median(floor_times) * 1e3
            result.read_ms = statistics.median(read_times) * 1e3
        if memory_jax and jax_ok:
            result.jax_peak_kib = peak_kib(jax, fresh())
        if memory:
            result.smalto_peak_kib = peak_kib(ours, fresh())
    return result


def benchmark_files(
    paths: Sequence[Path],
    *,
    repeat: int = DEFAULT_REPEAT,
    jax_repeat: int | None = None,
    clock: str = DEFAULT_CLOCK,
    progress: TextIO | None = None,
) -> list[ModuleResult]:
    """``measure_module`` on each file, in order."""
    results = []
    for path in paths:
        text = path.read_text()
        if progress is not None:
            print(f"  {display_name(path)} ...", file=progress, flush=True)
        results.append(
            measure_module(
                text,
                index_arch(path),
                name=display_name(path),
                path=str(path),
                repeat=repeat,
                jax_repeat=jax_repeat,
                clock=clock,
            )
        )
    return results


@dataclasses.dataclass(frozen=True)
class Summary:
    median_jax_over_smalto: float | None
    median_smalto_over_floor: float | None
    median_read_over_floor: float | None
    slower_than_jax: int
    compared: int
    not_identical: int
    failed: int


def summarize(results: Iterable[ModuleResult]) -> Summary:
    results = list(results)
    speedups = [r.jax_over_smalto for r in results if r.jax_over_smalto is not None]
    overheads = [r.smalto_over_floor for r in results if r.smalto_over_floor is not None]
    reads = [r.read_over_floor for r in results if r.read_over_floor is not None]
    return Summary(
        median_jax_over_smalto=statistics.median(speedups) if speedups else None,
        median_smalto_over_floor=statistics.median(overheads) if overheads else None,
        median_read_over_floor=statistics.median(reads) if reads else None,
        slower_than_jax=sum(1 for s in speedups if s < 1.0),
        compared=len(speedups),
        not_identical=sum(1 for r in results if r.identical is False),
        failed=sum(1 for r in results if r.error is not None),
    )


# --------------------------------------------------------------------------
# Fuel-exhausted kernels: smalto alone


def check_solution(module: ir.Module, *, arch: Arch = DEFAULT_ARCH) -> list[str] | None:
    """An independent check of the assignment smalto wrote on ``module``.

    ``smalto.check`` verifies every op's requirements (and the lowering's)
    from the attributes alone, without the solver. Returns the violations,
    one line each (empty: the assignment is valid).
    """
    from smalto.check import check

    return [str(v) for v in check(module, arch=arch)]


@dataclasses.dataclass
class FuelResult:
    name: str
    path: str
    arch: Arch
    ops: int
    smalto_ms: float
    runs: int
    solved: bool
    outcome: str  # "solved" or the first line of the error
    check: str  # what check_solution said
    jax_index_seconds: float | None  # JAX's time in the corpus index, when known


def measure_fuel_exhausted(
    path: Path,
    *,
    repeat: int = DEFAULT_REPEAT,
    fuel: int = smalto.DEFAULT_FUEL,
    clock: str = DEFAULT_CLOCK,
) -> FuelResult:
    """smalto on one hard kernel: median time (one run if it is slow) and outcome."""
    text = path.read_text()
    tick = CLOCKS[clock]
    ctx = reference.make_context()
    with ctx, ir.Location.unknown():
        first = reference.parse(text, ctx)
        arch = index_arch(path) or module_arch(first) or DEFAULT_ARCH
        ops = count_ops(first)

        def ours(m: ir.Module) -> None:
            run_smalto(m, arch, fuel)

        times: list[float] = []
        solved_module: ir.Module | None = None
        outcome = "solved"
        for _ in range(max(repeat, 1)):
            module = reference.parse(text, ctx)
            gc.collect()
            start = tick()
            try:
                ours(module)
                solved_module = module
            except Exception as error:  # noqa: BLE001 -- the failure is the outcome
                outcome = _error_line(error)
            times.append(tick() - start)
            if times[0] > REPEAT_BELOW_SECONDS:
                break
        check = "-"
        if solved_module is not None:
            violations = check_solution(solved_module, arch=arch)
            check = "valid" if not violations else f"{len(violations)} violations"
    entry = _index_entry(path)
    jax_seconds = None if entry is None else entry.get("jax_infer_seconds")
    return FuelResult(
        name=display_name(path),
        path=str(path),
        arch=arch,
        ops=ops,
        smalto_ms=statistics.median(times) * 1e3,
        runs=len(times),
        solved=solved_module is not None,
        outcome=outcome,
        check=check,
        jax_index_seconds=None if jax_seconds is None else float(jax_seconds),
    )


# --------------------------------------------------------------------------
# Reports


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def _kib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


KERNEL_HEADERS = (
    "module",
    "ops",
    "JAX ms",
    "smalto ms",
    "floor ms",
    "read ms",
    "JAX/smalto",
    "smalto/floor",
    "read/floor",
    "peak KB jax",
    "peak KB smalto",
)


def kernel_rows(results: Sequence[ModuleResult]) -> list[list[str]]:
    rows = []
    for r in results:
        name = r.name + ("" if r.identical is not False else " (*)")
        if r.error is not None:
            name += f" [{r.error}]"
        rows.append(
            [
                name,
                str(r.ops),
                _fmt(r.jax_ms),
                _fmt(r.smalto_ms),
                _fmt(r.floor_ms, 2),
                _fmt(r.read_ms, 2),
                _fmt(r.jax_over_smalto, 1, "x"),
                _fmt(r.smalto_over_floor, 1, "x"),
                _fmt(r.read_over_floor, 1, "x"),
                _kib(r.jax_peak_kib),
                _kib(r.smalto_peak_kib),
            ]
        )
    return rows


def summary_lines(summary: Summary) -> list[str]:
    lines = [
        f"median JAX/smalto: {_fmt(summary.median_jax_over_smalto, 2, 'x')} "
        f"(over {summary.compared} modules)",
        f"median smalto/floor: {_fmt(summary.median_smalto_over_floor, 2, 'x')}",
        f"median read/floor: {_fmt(summary.median_read_over_floor, 2, 'x')} "
        "(the reading alone, before any analysis)",
        f"modules where smalto is slower than JAX: {summary.slower_than_jax}",
    ]
    if summary.not_identical:
        lines.append(f"(*) attributes differ from JAX's on {summary.not_identical} modules")
    if summary.failed:
        lines.append(f"modules that failed: {summary.failed}")
    return lines


FUEL_HEADERS = ("kernel", "ops", "smalto ms", "runs", "outcome", "check", "JAX s (index)")


def fuel_rows(results: Sequence[FuelResult]) -> list[list[str]]:
    return [
        [
            r.name,
            str(r.ops),
            _fmt(r.smalto_ms),
            str(r.runs),
            r.outcome,
            r.check,
            _fmt(r.jax_index_seconds, 1),
        ]
        for r in results
    ]


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: numeric columns right-aligned, the others left-aligned."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    numeric = [
        i > 0 and all(_NUMERIC.fullmatch(row[i]) for row in rows) for i in range(len(headers))
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if right else cell.ljust(width)
            for cell, width, right in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


_NUMERIC = re.compile(r"-|[\d.,]+x?")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def escape(cell: str) -> str:
        return cell.replace("|", "\\|")

    align = [
        "---:" if i > 0 and all(_NUMERIC.fullmatch(row[i]) for row in rows) else "---"
        for i in range(len(headers))
    ]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def source_revision() -> str:
    """The checkout's commit (``-dirty`` with uncommitted changes), or ``unknown``."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return described.stdout.strip() or "unknown"


def environment_line() -> str:
    """Date (UTC), machine, CPU, cores, Python and JAX versions, smalto's commit."""
    import jax
    import jaxlib

    date = datetime.datetime.now(datetime.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    return (
        f"{date}; {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}; jax {jax.__version__}, jaxlib {jaxlib.__version__}; "
        f"smalto {source_revision()}"
    )


def write_markdown(path: Path, text: str, *, append: bool) -> None:
    if append and path.exists():
        existing = path.read_text()
        path.write_text(existing.rstrip("\n") + "\n\n" + text)
    else:
        path.write_text(text)


def clock_words(clock: str) -> str:
    return {"cpu": "process CPU time", "wall": "wall-clock time"}[clock]


def kernels_markdown(
    results: Sequence[ModuleResult], *, repeat: int, jax_repeat: int, clock: str = DEFAULT_CLOCK
) -> str:
    summary = summarize(results)
    source = _relative_folder(results)
    return "\n".join(
        [
            "# smalto vs JAX's layout inference: corpus kernels",
            "",
            f"Run: {environment_line()}.",
            "",
            f"Modules: `{source}`. Command: `python -m bench.run --clock {clock}`. Each time "
            f"({clock_words(clock)}) is the median of {repeat} runs ({jax_repeat} for JAX) on "
            "separately parsed copies, in one process; parsing is not timed. *floor*: one "
            "pre-order walk reading every op's operand and result types and setting the "
            "attributes smalto wrote (ready-made attribute objects). *read*: one pre-order walk "
            "gathering each op's name, operand identities (hashes) and result types into "
            "Python lists, no analysis (`bench.run.read_walk`). Peak KB: peak "
            "Python-heap allocation during one run (`tracemalloc`; MLIR's C++ allocations "
            "are not seen).",
            "",
            markdown_table(KERNEL_HEADERS, kernel_rows(results)),
            "",
            *(f"- {line}" for line in summary_lines(summary)),
            "",
        ]
    )


def fuel_markdown(results: Sequence[FuelResult], *, fuel: int, clock: str = DEFAULT_CLOCK) -> str:
    source = _relative_folder(results)
    return "\n".join(
        [
            "## Fuel-exhausted kernels (smalto only)",
            "",
            f"Run: {environment_line()}.",
            "",
            f"Modules: `{source}`. Command: `python -m bench.run --fuel-exhausted "
            f"--clock {clock}` (fuel {fuel:,}); smalto's time ({clock_words(clock)}) is the "
            f"median of the runs shown (one run when the first takes over "
            f"{REPEAT_BELOW_SECONDS:g} s). JAX's pass runs out of fuel on each of these; its "
            "time is the corpus index's `jax_infer_seconds`. *check*: `bench.run.check_solution`, "
            "smalto's independent checker on the solved assignment.",
            "",
            markdown_table(FUEL_HEADERS, fuel_rows(results)),
            "",
        ]
    )


def _relative_folder(results: Sequence[ModuleResult] | Sequence[FuelResult]) -> str:
    folders = sorted({str(Path(r.path).parent) for r in results})
    shown = []
    for folder in folders:
        try:
            shown.append(os.path.relpath(folder, REPO_ROOT))
        except ValueError:
            shown.append(folder)
    return ", ".join(shown) or "-"


# --------------------------------------------------------------------------
# Command line


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description="Time smalto against JAX's layout inference and the IR floor.",
    )
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        metavar="FILES",
        help="MLIR modules (default: the corpus kernels/, or fuel_exhausted/ with "
        "--fuel-exhausted)",
    )
    parser.add_argument(
        "--repeat", type=positive_int, default=DEFAULT_REPEAT, help="runs per figure (median)"
    )
    parser.add_argument(
        "--jax-repeat",
        type=positive_int,
        default=None,
        help="runs of JAX's pass per module (default: --repeat)",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default=DEFAULT_CLOCK,
        help="cpu: this process's CPU time (default; steadier on a shared machine); "
        "wall: wall-clock time",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the results as JSON")
    parser.add_argument("--markdown", type=Path, metavar="OUT", help="write a markdown report")
    parser.add_argument(
        "--append", action="store_true", help="append to the --markdown file, not overwrite it"
    )
    parser.add_argument(
        "--fuel-exhausted",
        action="store_true",
        help="smalto alone on the fuel_exhausted/ kernels: time and outcome",
    )
    parser.add_argument(
        "--fuel",
        type=positive_int,
        default=smalto.DEFAULT_FUEL,
        help="smalto's fuel with --fuel-exhausted (default: smalto.DEFAULT_FUEL)",
    )
    return parser


def positive_int(text: str) -> int:
    """argparse type: a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    folder = "fuel_exhausted" if args.fuel_exhausted else "kernels"
    files: list[Path] = args.files or default_files(folder)
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f"bench: error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if not files:
        print(f"bench: error: no modules found in {corpus_dir(folder)}", file=sys.stderr)
        return 2
    if args.fuel_exhausted:
        return _main_fuel_exhausted(files, args)
    return _main_kernels(files, args)


def _main_kernels(files: Sequence[Path], args: argparse.Namespace) -> int:
    jax_repeat = args.jax_repeat or args.repeat
    print(f"Timing {len(files)} modules ({args.repeat} runs each) ...", file=sys.stderr)
    results = benchmark_files(
        files, repeat=args.repeat, jax_repeat=jax_repeat, clock=args.clock, progress=sys.stderr
    )
    print(text_table(KERNEL_HEADERS, kernel_rows(results)))
    print()
    print("\n".join(summary_lines(summarize(results))))
    if args.json is not None:
        data = {
            "environment": environment_line(),
            "clock": args.clock,
            "repeat": args.repeat,
            "jax_repeat": jax_repeat,
            "modules": [dataclasses.asdict(r) for r in results],
            "summary": dataclasses.asdict(summarize(results)),
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    if args.markdown is not None:
        text = kernels_markdown(
            results, repeat=args.repeat, jax_repeat=jax_repeat, clock=args.clock
        )
        write_markdown(args.markdown, text, append=args.append)
    return 0


def _main_fuel_exhausted(files: Sequence[Path], args: argparse.Namespace) -> int:
    results = []
    for path in files:
        print(f"  {display_name(path)} ...", file=sys.stderr, flush=True)
        results.append(
            measure_fuel_exhausted(path, repeat=args.repeat, fuel=args.fuel, clock=args.clock)
        )
    print(text_table(FUEL_HEADERS, fuel_rows(results)))
    if args.json is not None:
        data = {
            "environment": environment_line(),
            "clock": args.clock,
            "fuel": args.fuel,
            "kernels": [dataclasses.asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    if args.markdown is not None:
        text = fuel_markdown(results, fuel=args.fuel, clock=args.clock)
        write_markdown(args.markdown, text, append=args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
