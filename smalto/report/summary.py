"""``smalto infer FILE --summary``: what inference chose, at a glance.

One line per value that has a layout, in the order of the printed module: its
printed line and name, the layout by name (``WGMMA``, ``WGMMA_ROW``,
``splat``, ``strided ×4``, ``tiled 8×64 + swizzle 128``, ``TMEM half_lane``),
its shape and the op that defines it (with its source position when it comes
from a Python file). Then the conversions between layouts that cost something:
a splat rebuilt in another layout is a free broadcast, and is only counted;
a ``layout_cast`` between tiled layouts moves registers (between threads,
through shuffles, for transposes and upcasts).

``conversions`` is shared with the HTML report, which flags the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.constraints.language import Role, Site
from smalto.hw.names import describe_value
from smalto.hw.values import Const, Reg
from smalto.infer import Inference
from smalto.program.view import Kind
from smalto.report.printed import PrintedModule
from smalto.report.reasons import Explainer

_KINDS = {Kind.VECTOR: "vector", Kind.SMEM: "smem", Kind.TMEM: "tmem"}
LAYOUT_CAST = "mosaic_gpu.layout_cast"


# --- layouts by name ---------------------------------------------------------------------


def layout_name(value: Const) -> str:
    """A layout by the name a kernel author knows it: ``WGMMA``, ``splat``, ``strided ×4``,
    ``tiled 8×64 + swizzle 128``, ``TMEM half_lane``; else a compact form of its tiling
    (``hw.names.describe_value``, as in error messages)."""
    return describe_value(value)


# --- conversions -------------------------------------------------------------------------

# Relayouts FragmentedArray.to_layout does with shuffles between threads.
_SHUFFLED = {
    (fa.WGMMA_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT),
    (fa.WGMMA_TRANSPOSED_LAYOUT, fa.WGMMA_LAYOUT),
    (fa.TCGEN05_LAYOUT, fa.TCGEN05_TRANSPOSED_LAYOUT),
    (fa.TCGEN05_TRANSPOSED_LAYOUT, fa.TCGEN05_LAYOUT),
    (fa.WGMMA_LAYOUT_UPCAST_2X, fa.WGMMA_LAYOUT),
    (fa.WGMMA_LAYOUT, fa.WGMMA_LAYOUT_UPCAST_2X),
    (fa.WGMMA_LAYOUT_UPCAST_4X, fa.WGMMA_LAYOUT_UPCAST_2X),
    (fa.WGMMA_LAYOUT_UPCAST_4X, fa.WGMMA_LAYOUT),
}


@dataclass(frozen=True)
class Conversion:
    """A register value used in another layout than the one it was made in."""

    value: int  # the value converted
    op: int  # the op that converts it: its user, or the layout cast
    source: Const
    target: Const
    at_cast: bool  # by a layout cast (else between its producer and a user)

    @property
    def free(self) -> bool:
        """A splat is rebuilt in any layout from its one value: a broadcast, no data moves."""
        return isinstance(self.source, Reg) and self.source.is_splat

    @property
    def how(self) -> str:
        if self.free:
            return "free: a splat broadcast"
        pair = (getattr(self.source, "layout", None), getattr(self.target, "layout", None))
        if pair in _SHUFFLED:
            return "registers shuffled between threads"
        return "registers moved within each thread"


def conversions(inference: Inference) -> list[Conversion]:
    """Every conversion between register layouts, in program order: at uses (splats only,
    as the lowering allows) and at layout casts."""
    system, state, program = inference.system, inference.solved.state, inference.program

    def value_of(site: Site) -> Const | None:
        var = system.var_of_site.get(site)
        return None if var is None else state.value[state.root[var]]

    found: list[Conversion] = []
    for op_id in sorted({site.op for site in system.var_of_site}):
        op = program.ops[op_id]
        for index, vid in enumerate(op.operands):
            if program.values[vid].kind != Kind.VECTOR:
                continue
            used = value_of(Site(op_id, Role.OPERAND, index))
            producer = program.values[vid].producer
            if used is None or producer is None:
                continue
            if producer.region is None:
                made = value_of(Site(producer.op, Role.RESULT, producer.index))
            else:
                made = value_of(Site(producer.op, Role.ARGUMENT, producer.index, producer.region))
            if made is not None and made != used:
                found.append(Conversion(vid, op_id, made, used, at_cast=False))
        if op.name == LAYOUT_CAST and op.operands and op.results:
            before = value_of(Site(op_id, Role.OPERAND, 0))
            after = value_of(Site(op_id, Role.RESULT, 0))
            if before is not None and after is not None and before != after:
                found.append(Conversion(op.operands[0], op_id, before, after, at_cast=True))
    return found


# --- the summary -------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One value with a layout."""

    name: str
    input_name: str | None
    line: int | None
    location: str | None  # the defining op's source position
    from_python: bool  # that position is in a source file, not in the module's own text
    op: str
    kind: str  # vector, smem, tmem
    shape: tuple[int, ...]
    element_type: str
    layout: str

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "input_name": self.input_name,
            "line": self.line,
            "location": self.location,
            "op": self.op,
            "kind": self.kind,
            "shape": list(self.shape),
            "element_type": self.element_type,
            "layout": self.layout,
        }


@dataclass(frozen=True)
class Relayout:
    """A conversion that costs something, named: ``%12`` at `` `mosaic_gpu.layout_cast` at
    line 31``."""

    name: str
    where: str
    conversion: Conversion


@dataclass(frozen=True)
class Summary:
    file: str
    arch: tuple[int, int]
    rows: list[Row]
    costly: list[Relayout]
    free: int  # splat broadcasts

    def counts(self) -> dict[str, int]:
        """Values per layout, the most used first."""
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.layout] = counts.get(row.layout, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: -item[1]))

    def text(self) -> str:
        arch = f"{self.arch[0]}.{self.arch[1]}"
        counts = ", ".join(f"{n} {name}" for name, n in self.counts().items())
        lines = [
            f"{self.file}: {len(self.rows)} values with layouts (arch {arch})"
            + (f": {counts}" if counts else "")
        ]
        broadcasts = f"{self.free} splat broadcast{'s' if self.free != 1 else ''} (free)"
        if self.costly:
            lines.append(f"relayouts that cost something: {len(self.costly)}; {broadcasts}")
            for relayout in self.costly:
                c = relayout.conversion
                lines.append(
                    f"  {relayout.name} at {relayout.where}: {layout_name(c.source)} -> "
                    f"{layout_name(c.target)} ({c.how})"
                )
        else:
            lines.append(f"relayouts that cost something: none; {broadcasts}")
        if self.rows:
            lines.append("")
            lines += _table(self.rows)
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "arch": f"{self.arch[0]}.{self.arch[1]}",
            "values": [row.as_json() for row in self.rows],
            "layouts": self.counts(),
            "relayouts": [
                {
                    "value": r.name,
                    "where": r.where,
                    "from": layout_name(r.conversion.source),
                    "to": layout_name(r.conversion.target),
                    "at_cast": r.conversion.at_cast,
                    "cost": r.conversion.how,
                }
                for r in self.costly
            ],
            "free_broadcasts": self.free,
        }


def _table(rows: list[Row]) -> list[str]:
    python = any(row.from_python for row in rows)
    header = ["line", "value", "layout", "shape", "defined by"]
    cells = [
        [
            str(row.line or "?"),
            row.name,
            row.layout,
            _shape_text(row),
            row.op + (f" at {row.location}" if python and row.from_python else ""),
        ]
        for row in rows
    ]
    widths = [max(len(c[i]) for c in [header, *cells]) for i in range(len(header) - 1)]
    out = []
    for cell in [header, *cells]:
        first = cell[0].rjust(widths[0])
        middle = [text.ljust(width) for text, width in zip(cell[1:-1], widths[1:], strict=True)]
        out.append("  ".join([first, *middle, cell[-1]]).rstrip())
    return out


def _shape_text(row: Row) -> str:
    shape = "x".join(map(str, row.shape)) if row.shape else "scalar"
    prefix = {"vector": "", "smem": "SMEM ", "tmem": "TMEM "}[row.kind]
    return f"{prefix}{shape}x{row.element_type}" if row.shape else f"{prefix}{row.element_type}"


def summarize(
    inference: Inference, printed: PrintedModule, file: str, arch: tuple[int, int]
) -> Summary:
    """The summary of a solved module, named and placed as ``printed`` prints it."""
    explainer = Explainer(inference, file, printed)
    program, state = inference.program, inference.solved.state
    rows = []
    for vid in explainer.values():
        value = program.values[vid]
        var = explainer.var_of_value[vid]
        layout = state.value[state.root[var]]
        producer = value.producer
        assert producer is not None  # values() keeps defined values only
        rows.append(
            Row(
                name=explainer.name(vid),
                input_name=printed.input_names.get(vid),
                line=printed.value_lines.get(vid, printed.line_of_op(producer.op)),
                location=explainer.source_location(vid),
                from_python=not explainer.in_input(producer.op),
                op=program.ops[producer.op].name,
                kind=_KINDS[value.kind],
                shape=value.shape,
                element_type=_element_type(value.type),
                layout="unassigned" if layout is None else layout_name(layout),
            )
        )
    costly = []
    free = 0
    for conversion in conversions(inference):
        if conversion.free:
            free += 1
            continue
        where = explainer.op_text(conversion.op)
        line = printed.line_of_op(conversion.op)
        if line is not None and not explainer.in_input(conversion.op):
            where += f" (line {line})"
        costly.append(Relayout(explainer.name(conversion.value), where, conversion))
    return Summary(file, arch, rows, costly, free)


def _element_type(ty: ir.Type) -> str:
    return str(ir.ShapedType(ty).element_type)
