"""A kernel's SMEM for people: the table ``smalto smem`` prints, its JSON, the report page's
section, and what to say where a kernel exceeds what a block may have (the top users at
the kernel's lines, then the verified changes that bring it under).

A change that only moves offsets (a scratch scoped tighter, a buffer reused) is
whole on the changed copy of the module, so it is also lowered again with JAX's
own dialect lowering (``lowered_cuts``); a change of stages changes the buffer's
type and every use of it, which only the kernel's source can say: it is
verified on the map.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from jax._src.lib.mlir import ir

from smalto.draw.smem_map import smem_map_image
from smalto.smem.allocations import Allocation, SmemMap
from smalto.smem.cuts import Cut

# JAX 0.12.0.1's words for a kernel over the limit (``mosaic_gpu.core._launch``).
JAX_PHRASE = "Mosaic GPU kernel exceeds available shared memory"


@dataclass(frozen=True)
class Verdict:
    """How a cut was verified: on the map always; by JAX's lowering where it can be."""

    lowered: bool | None  # True: JAX's lowering accepts the changed copy; None: not run
    why: str = ""  # what JAX's lowering said, where it refused
    relowered: str = ""  # how the kernel itself was lowered again with the change, if it was

    def words(self) -> str:
        if self.relowered:
            return f"verified: {self.relowered}"
        if self.lowered is True:
            return "verified: the map computed again, and JAX's lowering accepts the change"
        if self.lowered is False:
            return f"the map computed again; JAX's lowering refuses the change: {self.why}"
        return "verified: the map computed again on the changed module"


def lowered_cuts(cuts: list[Cut], arch: tuple[int, int]) -> list[Verdict]:
    """Each cut's verdict: its changed copy inferred (smalto's pass) and lowered by JAX's
    dialect lowering, where the copy is the whole change and has a launch to lower in."""
    from smalto.basics.mlir import clone_module
    from smalto.diagnose.jax_lowering import jax_lowering_accepts
    from smalto.errors import InferenceError
    from smalto.infer import infer_layout

    verdicts = []
    for cut in cuts:
        if not cut.lowerable or cut.changed.size is None:
            verdicts.append(Verdict(None))
            continue
        with cut.module.context, ir.Location.unknown(cut.module.context):
            copy = clone_module(cut.module)
            try:
                infer_layout(copy, arch=arch)
            except (InferenceError, ValueError, NotImplementedError):
                verdicts.append(Verdict(None))
                continue
            accepted, why = jax_lowering_accepts(copy.operation)
        verdicts.append(Verdict(accepted, why))
    return verdicts


def _kib(size: int) -> str:
    return f"{size / 1024:.1f} KiB"


def _where(smem: SmemMap, op: int | None) -> str:
    if op is None:
        return "nowhere"
    line = smem.line_at(op)
    return f"{line} (op {op}, {smem.ops[op]})" if line else f"op {op} ({smem.ops[op]})"


def _at_op(smem: SmemMap, op: int | None) -> str:
    where = _where(smem, op)
    return where if where.startswith("near ") else f"at {where}"


def headline(smem: SmemMap, arch: tuple[int, int]) -> list[str]:
    peak, where = smem.peak
    size = (
        f"{smem.total} bytes of dynamic SMEM ({_kib(smem.total)}, the launch's)"
        if smem.size is not None
        else f"{smem.total} bytes of SMEM sliced (the module has no launch size)"
    )
    room = (
        f"{smem.over} bytes over the limit"
        if smem.over
        else f"{smem.limit - smem.total} bytes to spare"
    )
    lines = [
        f"{smem.kernel}: {size}; limit {smem.limit} bytes a block on sm_{arch[0]}{arch[1]}: {room}",
        f"peak: the allocations reach byte {peak} {_at_op(smem, where)}, with "
        f"{smem.in_use_at(where)} bytes in use there ({smem.reserved} of them laid out by "
        "the launch for the whole kernel)"
        if where is not None
        else f"peak: {peak} bytes, all laid out by the launch for the whole kernel"
        if smem.allocations
        else "no SMEM allocation",
    ]
    unused = smem.unused
    if smem.size is not None and unused > 0:
        lines.append(
            f"{unused} bytes of the launch's are never in use (Pallas sizes its scratch "
            "before it knows which reductions need any, and counts each run_scoped apart)"
        )
    return lines


def table(smem: SmemMap) -> list[str]:
    """One row per allocation, in program order."""
    rows = _rows(smem)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {0, 1, 2}
    return [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def top_users_lines(smem: SmemMap, count: int = 5) -> list[str]:
    """The largest allocations taken at the peak, at the kernel's lines."""
    return [f"  {a.summary()}" for a in smem.top_users(count)]


def cut_lines(cuts: list[Cut], verdicts: list[Verdict] | None = None) -> list[str]:
    out = []
    for n, cut in enumerate(cuts):
        enough = "brings it under" if cut.enough else "not enough alone"
        out.append(
            f"  {cut.kind}: {cut.text}: saves {cut.saves} bytes -> {cut.total} ({enough}) "
            f"[{cut.applicability}]"
        )
        if cut.parameter:
            out.append(f"    the kernel's parameter: {cut.parameter}")
        if verdicts is not None:
            out.append(f"    {verdicts[n].words()}")
    return out


def text_report(
    smem: SmemMap,
    arch: tuple[int, int],
    cuts: list[Cut],
    verdicts: list[Verdict] | None = None,
) -> str:
    """What ``smalto smem`` prints."""
    lines = headline(smem, arch) + [""] + table(smem)
    if smem.over:
        lines += ["", over_limit_text(smem, cuts, verdicts)]
    elif cuts:
        lines += ["", "changes that would shrink it:"] + cut_lines(cuts, verdicts)
    return "\n".join(lines)


def over_limit_text(smem: SmemMap, cuts: list[Cut], verdicts: list[Verdict] | None = None) -> str:
    """JAX's phrase for a kernel over the limit, then what uses the SMEM at the peak, then
    the changes that bring it under (the error of the route, ``smalto infer``'s note)."""
    peak, where = smem.peak
    lines = [
        f"{JAX_PHRASE}: smem_bytes={smem.total} > max_smem_bytes={smem.limit}",
        f"the allocations reach byte {peak} {_at_op(smem, where)}, where "
        f"{smem.in_use_at(where)} bytes are in use; the largest there:",
        *top_users_lines(smem),
    ]
    if cuts:
        lines.append("changes that bring it under (they change speed, not results):")
        lines += cut_lines(cuts, verdicts)
    else:
        lines.append("no change of stages or scopes found that brings it under")
    return "\n".join(lines)


def allocation_json(a: Allocation) -> dict[str, object]:
    return {
        "op": a.index,
        "kind": a.kind,
        "type": a.what,
        "offset": a.offset,
        "bytes": a.bytes,
        "padded_bytes": a.footprint,
        "stages": a.stages,
        "first_op": a.start,
        "first_use_op": a.used_from,
        "last_op": a.end,
        "line": a.line,
    }


def smem_json(
    smem: SmemMap,
    arch: tuple[int, int],
    cuts: list[Cut],
    verdicts: list[Verdict] | None = None,
) -> dict[str, object]:
    peak, where = smem.peak
    return {
        "kernel": smem.kernel,
        "arch": f"{arch[0]}.{arch[1]}",
        "dynamic_smem_bytes": smem.size,
        "limit_bytes": smem.limit,
        "over_limit_bytes": smem.over,
        "launch_reserved_bytes": smem.reserved,
        "unused_bytes": smem.unused,
        "peak": {
            "bytes": peak,
            "in_use_bytes": smem.in_use_at(where),
            "op": where,
            "line": smem.lines[where] if where is not None else None,
        },
        "ops": len(smem.ops),
        "allocations": [allocation_json(a) for a in smem.allocations],
        "top_users": [a.index for a in smem.top_users()],
        "cuts": [
            {
                "kind": cut.kind,
                "change": cut.text,
                "op": cut.subject.index,
                "line": cut.subject.line,
                "saves_bytes": cut.saves,
                "total_bytes": cut.total,
                "brings_under": cut.enough,
                "parameter": cut.parameter,
                "applicability": cut.applicability,
                "jax_lowering": None if verdicts is None else verdicts[n].lowered,
                "verified": None if verdicts is None else verdicts[n].words(),
            }
            for n, cut in enumerate(cuts)
        ],
    }


def html_section(
    smem: SmemMap,
    arch: tuple[int, int],
    cuts: list[Cut],
    verdicts: list[Verdict] | None = None,
) -> str:
    """The report page's section: the headline, the picture (SVG, inline), the table, the
    changes."""
    out = ['<section id="smem"><h2>Shared memory</h2>']
    out += [f"<p>{html.escape(line)}</p>" for line in headline(smem, arch)]
    out.append(smem_map_image(smem, "svg").decode("utf-8").split("?>", 1)[-1])
    out.append("<table><tr>")
    header, *rows = [line for line in _rows(smem)]
    out.append("".join(f"<th>{html.escape(cell)}</th>" for cell in header) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>")
    out.append("</table>")
    if smem.over:
        out.append(f"<pre>{html.escape(over_limit_text(smem, cuts, verdicts))}</pre>")
    elif cuts:
        out.append("<p>Changes that would shrink it:</p>")
        out.append(f"<pre>{html.escape(chr(10).join(cut_lines(cuts, verdicts)))}</pre>")
    out.append("</section>")
    return "\n".join(out)


def _rows(smem: SmemMap) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("offset", "bytes", "padded", "kind", "type", "ops", "line")]
    for a in smem.allocations:
        what = a.what + (f" ({a.stages} stages)" if a.stages else "")
        rows.append(
            (
                str(a.offset),
                str(a.bytes),
                str(a.footprint),
                a.kind,
                what,
                f"{a.start}-{a.end}",
                a.line or "",
            )
        )
    return rows


def html_page(
    smem: SmemMap,
    arch: tuple[int, int],
    cuts: list[Cut],
    verdicts: list[Verdict] | None = None,
) -> str:
    """``smalto smem --report``: a page of the section alone."""
    title = html.escape(f"SMEM of {smem.kernel}")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="en"><head><meta charset="utf-8"><title>{title}</title>',
            "<style>body{font-family:sans-serif} td,th{padding:2px 8px;text-align:left}"
            "pre{background:#f6f6f6;padding:8px}</style></head><body>",
            f"<h1>{title}</h1>",
            html_section(smem, arch, cuts, verdicts),
            "</body></html>",
        ]
    )


def module_section(module: ir.Module) -> str:
    """The SMEM section of ``smalto infer --report``'s page, for ``module`` (its cuts
    verified on the map, not lowered: the page is written on every report)."""
    from smalto.basics.mlir import in_context, module_arch
    from smalto.smem.allocations import read_smem_map
    from smalto.smem.cuts import smem_cuts

    arch = module_arch(module) or (9, 0)
    with in_context(module):
        smem = read_smem_map(module, arch)
        cuts = smem_cuts(smem, module, arch) if smem.over else []
    return html_section(smem, arch, cuts)
