"""``smalto infer --report out.html``: one page that shows what inference chose.

Sections: a summary; every distinct layout, transform and TMEM layout the
kernel uses, each with a picture (PNG, embedded as a data URI) and the values
that use it; every op with its in/out layouts and transforms, the relayouts
that cost something marked (a splat used in another layout is a free
broadcast: noted, not marked; see ``smalto.report.summary.conversions``); why each
value has its layout (``smalto explain --all``); the kernel's SMEM
(``smalto.report.smem_map``); and the module as ``smalto
infer`` prints it, whose lines the page names.

When inference fails, ``write_failure_report`` writes the page that helps
most then: the diagnosis (the requirements that cannot hold together, with
their ops and locations, the values involved, the suggestion) and the input
module, its lines that the diagnosis names marked.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.basics.writing import write_file
from smalto.constraints.language import Role, Site
from smalto.draw.ownership import ownership, tmem_placement
from smalto.draw.pictures import register_grid, smem_grid, tmem_grid
from smalto.draw.render import Grid, render
from smalto.draw.smem import smem_placement
from smalto.hw.names import describe_value
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.infer import Inference
from smalto.program.view import Kind
from smalto.report.printed import PrintedModule
from smalto.report.reasons import Explainer
from smalto.report.smem_map import module_section
from smalto.report.summary import Conversion, conversions, layout_name
from smalto.source.locations import location_name

# Pictures in the report show a part of the array: enough rows for all four warps.
PICTURE_ROWS = 64
PICTURE_COLS = 16
SMEM_PICTURE_ROWS = 16
SMEM_PICTURE_COLS = 64
TMEM_PICTURE_COLS = 8
PICTURE_DPI = 110


@dataclass
class Pictured:
    """One distinct layout (or transform) and where it is used."""

    anchor: str
    key: object
    value: Const
    title: str
    shape: tuple[int, ...]
    dtype: str
    bitwidth: int
    swizzle: int = 16
    order: tuple[int, ...] | None = None  # SMEM views not in row-major order: the dims by stride
    users: list[str] = field(default_factory=list)


@dataclass
class _Row:
    op: str
    where: str
    line: int | None  # in the printed module
    results: str
    inputs: list[str]
    outputs: list[str]
    relayouts: list[str]  # conversions that cost something
    broadcasts: list[str]  # splats used in another layout: free


class _Page:
    def __init__(
        self, inference: Inference, source_name: str, printed: PrintedModule | None = None
    ) -> None:
        self.inference = inference
        self.program = inference.program
        self.system = inference.system
        self.state = inference.solved.state
        self.explainer = Explainer(inference, source_name, printed)
        self.printed = self.explainer.printed
        self.layouts: dict[object, Pictured] = {}
        self.rows: list[_Row] = []
        self.rewritten: list[str] = []  # the unit-dim rewrite's changes, as it said them
        self.unoptimized: list[str] = []  # the transfers made unoptimized, as warned
        self.staged: list[str] = []  # the transfers staged through SMEM, as warned
        self.smem = ""  # the section on the kernel's SMEM (``smalto.report.smem_map``)
        self.conversions: dict[int, list[Conversion]] = {}
        for conversion in conversions(inference):
            self.conversions.setdefault(conversion.op, []).append(conversion)

    def value_of_site(self, site: Site) -> Const | None:
        var = self.system.var_of_site.get(site)
        if var is None:
            return None
        return self.state.value[self.state.root[var]]

    def layout_entry(self, value: Const, vid: int) -> Pictured:
        info = self.program.values[vid]
        swizzle = 16  # the drawing's "no swizzle"
        if isinstance(value, Smem):
            swizzle = value.swizzle or 16
            key: object = (value, info.bitwidth)
        else:
            key = value
        entry = self.layouts.get(key)
        if entry is None:
            title = describe_value(value)
            order = None
            if isinstance(value, Smem) and value.tiling is not None:
                title += f" ({info.bitwidth}-bit elements)"
                order = memory_order(info.strides, len(value.tiling))
                if order is not None:
                    title += ", seen transposed"
            entry = Pictured(
                f"layout-{len(self.layouts) + 1}",
                key,
                value,
                title,
                info.shape,
                _element_type(info.type),
                info.bitwidth or 32,
                swizzle,
                order,
            )
            self.layouts[key] = entry
        return entry

    def cell(self, value: Const | None, vid: int) -> str:
        if value is None:
            return "-"
        entry = self.layout_entry(value, vid)
        name = self.explainer.name(vid)
        if name not in entry.users:
            entry.users.append(name)
        return f'<a href="#{entry.anchor}">{html.escape(entry.title)}</a>'

    def collect(self) -> None:
        ops_with_layouts = sorted({site.op for site in self.system.var_of_site})
        for op_id in ops_with_layouts:
            op = self.program.ops[op_id]
            inputs = []
            relayouts: list[str] = []
            broadcasts: list[str] = []
            for conversion in self.conversions.get(op_id, ()):
                text = (
                    f"{html.escape(self.explainer.name(conversion.value))}: "
                    f"{html.escape(layout_name(conversion.source))} &rarr; "
                    f"{html.escape(layout_name(conversion.target))}"
                )
                if conversion.free:
                    broadcasts.append(f"{text} (free: a splat broadcast)")
                else:
                    relayouts.append(f"{text} ({html.escape(conversion.how)})")
            for i, vid in enumerate(op.operands):
                value = self.value_of_site(Site(op_id, Role.OPERAND, i))
                if value is None:
                    continue
                inputs.append(self.cell(value, vid))
            outputs = []
            for i, vid in enumerate(op.results):
                value = self.value_of_site(Site(op_id, Role.RESULT, i))
                if value is not None:
                    outputs.append(self.cell(value, vid))
            for region, blocks in enumerate(op.regions):
                if not blocks:
                    continue
                for i, vid in enumerate(blocks[0][0]):
                    value = self.value_of_site(Site(op_id, Role.ARGUMENT, i, region))
                    if value is not None:
                        self.cell(value, vid)
            results = ", ".join(
                html.escape(self.explainer.name(v))
                for v in op.results
                if self.program.values[v].kind != Kind.OTHER
            )
            where = self.explainer.where(op_id)
            # JAX names each op's location after the primitive it lowers (`swap`, `dot`).
            name = location_name(op.location)
            if name is not None and name != op.name.rsplit(".", 1)[-1] and name != where:
                where = f"{where} ({name})"
            line = self.printed.line_of_op(op_id)
            self.rows.append(
                _Row(op.name, where, line, results, inputs, outputs, relayouts, broadcasts)
            )


def memory_order(strides: tuple[int, ...] | None, rank: int) -> tuple[int, ...] | None:
    """The trailing ``rank`` dims from largest to smallest stride, if that is not 0, 1, ..."""
    if not strides or len(strides) < rank:
        return None
    tail = strides[-rank:]
    order = tuple(sorted(range(rank), key=lambda d: -tail[d]))
    return None if order == tuple(range(rank)) else order


def _element_type(ty: ir.Type) -> str:
    if isinstance(ty, ir.ShapedType):
        return str(ir.ShapedType(ty).element_type)
    return str(ty)


def picture(
    entry: Pictured,
    *,
    rows: int = PICTURE_ROWS,
    cols: int = PICTURE_COLS,
    smem_window: tuple[int, int] = (SMEM_PICTURE_ROWS, SMEM_PICTURE_COLS),
) -> Grid | None:
    """The picture of a layout at the shape of its first user (None for splats); register
    layouts show ``rows`` x ``cols`` of the array, SMEM refs ``smem_window``."""
    match entry.value:
        case Reg(layout=fa.WGSplatFragLayout()):
            return None
        case Reg(layout=layout):
            held = ownership(layout, entry.shape)
            return register_grid(held, entry.title, entry.dtype, rows, cols)
        case Smem(tiling=tiling):
            shape = entry.shape[-len(tiling) :] if tiling else entry.shape[-2:]
            if not shape or 0 in shape:
                return None
            if entry.order is not None:  # a transposed view: draw it in memory order
                shape = tuple(shape[d] for d in entry.order)
                tiling = tuple(tiling[d] for d in entry.order) if tiling else None
            in_smem = smem_placement(shape, tiling, entry.swizzle, entry.bitwidth)
            return smem_grid(in_smem, entry.dtype, *smem_window)
        case Tmem(layout=layout):
            in_tmem = tmem_placement(layout, entry.shape)
            return tmem_grid(in_tmem, entry.title, entry.dtype, TMEM_PICTURE_COLS)
    return None


PAGE_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 12px; }
td, th { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; text-align: left; }
tr.relayout { background: #fff3cd; } .free { color: #777; }
pre.module { font-size: 11px; line-height: 1.35; overflow-x: auto; }
pre.module .n { color: #999; user-select: none; } pre.module .hit { background: #fde2e1; }
.error { white-space: pre-wrap; font-family: ui-monospace, monospace; background: #fde2e1;
  padding: 0.5em; }
code, .mono { font-family: ui-monospace, monospace; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { margin-bottom: 0.5em; }
.why { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 12px; }
.clash .sides { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.clash figure { margin: 0 0 1em; flex: 1 1 36em; max-width: 100%; } .note { color: #8a5a00; }
"""

# Marks on <body> how many pictures decoded, for tests (and curious readers).
PAGE_SCRIPT = """
window.addEventListener("load", () => {
  const images = [...document.querySelectorAll("figure img")];
  document.body.dataset.imagesLoaded = images.filter(i => i.complete && i.naturalWidth > 0).length;
});
"""


def _html(page: _Page, title: str) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{PAGE_STYLE}</style>",
        f"<script>{PAGE_SCRIPT}</script></head><body>",
        f"<h1>Layouts of {html.escape(title)}</h1>",
    ]
    relayouts = sum(len(r.relayouts) for r in page.rows)
    broadcasts = sum(len(r.broadcasts) for r in page.rows)
    out.append('<section id="summary"><h2>Summary</h2><ul>')
    out.append(f"<li>{len(page.rows)} ops with layouts</li>")
    out.append(f"<li>{len(page.layouts)} distinct layouts and transforms</li>")
    out.append(f"<li>{relayouts} relayouts that cost something</li>")
    out.append(f"<li>{broadcasts} splats broadcast to another layout (free)</li></ul></section>")
    out += _changes(page)
    out.append('<section id="layouts"><h2>Layouts used</h2>')
    for entry in page.layouts.values():
        users = ", ".join(entry.users[:12]) + (" ..." if len(entry.users) > 12 else "")
        out.append(
            f'<figure id="{entry.anchor}"><figcaption><b>{html.escape(entry.title)}</b> '
            f"(drawn for {'x'.join(map(str, entry.shape))} {html.escape(entry.dtype)}; "
            f"used by <span class=mono>{html.escape(users)}</span>)</figcaption>"
        )
        try:
            grid = picture(entry)
        except ValueError as error:  # a layout we cannot draw must not cost the whole page
            grid = None
            out.append(f"<p>(no picture: {html.escape(str(error))})</p>")
        if grid is not None:
            data = base64.b64encode(render([grid], "png", PICTURE_DPI)).decode("ascii")
            alt = html.escape(f"picture of {entry.title}")
            out.append(f'<img src="data:image/png;base64,{data}" alt="{alt}">')
        out.append("</figure>")
    out.append("</section>")
    out.append('<section id="ops"><h2>Operations</h2><table>')
    out.append(
        "<tr><th>where</th><th>op</th><th>results</th><th>in</th><th>out</th><th>relayout</th></tr>"
    )
    for row in page.rows:
        css = ' class="relayout"' if row.relayouts else ""
        where = html.escape(row.where)
        if row.line is not None:
            where = f'<a href="#L{row.line}">{where}</a>'
        notes = row.relayouts + [f'<span class="free">{b}</span>' for b in row.broadcasts]
        out.append(
            f"<tr{css}><td>{where}</td><td><code>{html.escape(row.op)}</code>"
            f"</td><td class=mono>{row.results}</td><td>{'<br>'.join(row.inputs)}</td>"
            f"<td>{'<br>'.join(row.outputs)}</td><td>{'<br>'.join(notes)}</td></tr>"
        )
    out.append("</table></section>")
    out.append('<section id="why"><h2>Why each value has its layout</h2><div class="why">')
    for vid in page.explainer.values():
        out.append(html.escape(page.explainer.explain_value(vid).text(detailed=False)))
    out.append("</div></section>")
    out.append(page.smem)
    out.append('<section id="module"><h2>The module</h2><details><summary>as `smalto infer` ')
    out.append(f"prints it ({len(page.printed.text.splitlines())} lines)</summary>")
    out.append(listing_html(page.printed.text, set()))
    out.append("</details></section></body></html>")
    return "\n".join(out)


def _changes(page: _Page) -> list[str]:
    """What smalto changed in the module to find these layouts (the module as written has
    none): the rescues' own words, before anything else."""
    if not page.rewritten and not page.unoptimized and not page.staged:
        return []
    out = ['<section id="changes"><h2>What smalto changed</h2>']
    if page.rewritten:
        out.append(
            "<p>The module as written has no layouts; smalto rewrote these ops (the unit-dim "
            "rewrite: values with unit dims computed without them, the same results), and "
            "the layouts below are those of the rewritten module "
            "(<code>--no-rewrite</code>: not):</p><ul>"
        )
        out += [f"<li>{html.escape(line)}</li>" for line in page.rewritten]
        out.append("</ul>")
    if page.unoptimized:
        out.append(
            "<p>As <code>--allow-unoptimized</code> allows, these transfers were made "
            "unoptimized (they run slower):</p><ul>"
        )
        out += [f'<li class="note">{html.escape(line)}</li>' for line in page.unoptimized]
        out.append("</ul>")
    if page.staged:
        out.append(
            "<p>As <code>--stage-through-smem</code> allows, these transfers go through a new "
            "SMEM buffer (every transfer optimized; the kernel's SMEM grew):</p><ul>"
        )
        out += [f'<li class="note">{html.escape(line)}</li>' for line in page.staged]
        out.append("</ul>")
    out.append("</section>")
    return out


def listing_html(text: str, marked: set[int]) -> str:
    """A module's text with numbered lines, each an anchor (``#L12``); ``marked`` lines
    highlighted."""
    lines = text.splitlines()
    width = len(str(len(lines)))
    out = ['<pre class="module">']
    for number, line in enumerate(lines, 1):
        css = ' class="hit"' if number in marked else ""
        out.append(
            f'<span id="L{number}"{css}><span class="n">{number:>{width}}  </span>'
            f"{html.escape(line)}</span>"
        )
    out.append("</pre>")
    return "\n".join(out)


def write_report(
    module: ir.Module,
    inference: Inference,
    path: str | Path,
    *,
    source_name: str = "<input>",
    printed: PrintedModule | None = None,
    rewritten: Sequence[str] = (),
    unoptimized: Sequence[str] = (),
    staged: Sequence[str] = (),
) -> None:
    """Writes the HTML report of a solved ``module`` (from ``solve_module``) to ``path``.

    Works before or after the attributes are written, inside or outside the
    module's context. ``source_name`` names the input file, so that ops parsed
    from it are placed by line of the printed module ("line 88"); ``printed``
    is that module (default: ``module`` in pretty form). ``rewritten``,
    ``unoptimized`` and ``staged`` are what the rescues changed to get there, as they
    said it (a line per op the unit-dim rewrite changed, one per transfer made
    unoptimized or staged through SMEM): the page says so first.
    """
    page = _Page(inference, source_name, printed)
    page.smem = module_section(module)
    page.collect()
    page.rewritten, page.unoptimized = list(rewritten), list(unoptimized)
    page.staged = list(staged)
    write_file(path, _html(page, source_name))
