"""The page of a failed inference (``smalto infer --report PAGE`` on a kernel with no
layouts): what failed, the diagnosis (the fix first), pictures of the layouts in
conflict side by side, the user's source lines, and the module with the lines the
diagnosis names marked (also where the ops are located in the user's Python, as
Pallas captures them). The page of a successful inference is ``smalto.report``'s;
the two share its style and listing.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path

from smalto.clash import Clash, Side, conflict_clashes
from smalto.draw.render import Grid, render
from smalto.failure import source_line
from smalto.hw.values import Reg, Smem
from smalto.inputs import Input
from smalto.locations import location_text
from smalto.mlir import in_context
from smalto.printed import PrintedModule, printed_module
from smalto.program import Program
from smalto.reader import read_program

# Pictures in the report show a part of the array: enough rows for all four warps.
from smalto.report import (
    PAGE_SCRIPT,
    PAGE_STYLE,
    PICTURE_DPI,
    Pictured,
    listing_html,
    memory_order,
    picture,
)
from smalto.sources import Sources


def write_failure_report(
    source: Input,
    error: Exception,
    path: str | Path,
    *,
    arch: tuple[int, int] = (9, 0),
    sources: Sources | None = None,
) -> None:
    """Writes the page of a failed inference to ``path``: the diagnosis on ``error`` (an
    ``InferenceError``'s ``conflict``, when it has one), pictures of the layouts in
    conflict, and ``source``'s module with the lines the diagnosis names marked; the
    user's source lines looked up by ``sources`` (default: beside the module file).
    ``source.module`` must be as it came (a failed inference leaves it so)."""
    sources = sources if sources is not None else Sources(near=[source.name])
    conflict = getattr(error, "conflict", None)
    message = str(error) or type(error).__name__
    title = source.name
    with in_context(source.module):
        listing = _failurelisting_html(conflict, source)
        clashes = _clashes(conflict, listing.program, arch)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}: no layouts</title><style>{PAGE_STYLE}</style>",
        f"<script>{PAGE_SCRIPT}</script></head><body>",
        f"<h1>No layouts for {html.escape(title)}</h1>",
        '<section id="error"><h2>What failed</h2>',
        f'<p class="error">{html.escape(message.splitlines()[0])}</p></section>',
    ]
    if conflict is not None:
        out += _diagnosis(conflict, listing)
        if clashes:
            out += _clash_section(clashes, listing)
        out += _suggestion(conflict, sources)
        out += _source_section(conflict, source, sources)
    else:
        out.append('<section id="diagnosis"><h2>Diagnosis</h2>')
        out.append(f'<div class="why">{html.escape(message)}</div></section>')
    out.append('<section id="module"><h2>The module</h2>')
    out.append(f"<p>{html.escape(listing.caption)}</p>")
    out.append(listing_html(listing.text, listing.marked))
    out.append("</section></body></html>")
    Path(path).write_text("\n".join(out), encoding="utf-8")


@dataclass
class _FailureListing:
    """The module the failure page shows, and where the diagnosis's locations are in it."""

    text: str
    caption: str
    lines: dict[str, list[int]]  # a location the diagnosis names -> its lines in ``text``
    program: Program | None = None
    printed: PrintedModule | None = None

    @property
    def marked(self) -> set[int]:
        return {line for lines in self.lines.values() for line in lines}

    def name(self, value: int) -> str:
        if self.printed is not None and value in self.printed.names:
            return self.printed.names[value]
        return f"value #{value}"


def _failurelisting_html(conflict: object, source: Input) -> _FailureListing:
    """The input as given where the diagnosis's locations are its own lines; else (a
    module whose ops are located in the user's Python, as Pallas captures them) the module
    as ``smalto infer`` prints it, with the lines of the ops that carry those locations."""
    locations = _diagnosis_locations(conflict)
    program = None
    try:
        program = read_program(source.module)
    except Exception:  # noqa: BLE001 -- the page still shows the module and the message
        program = None
    in_input = _input_lines(locations, source)
    given = f"{source.name}, as given; the lines named above are marked."
    if in_input or not locations or program is None:
        printed = None
        if program is not None:
            try:
                printed = printed_module(source.module, program)
            except Exception:  # noqa: BLE001 -- names only: the page does without
                printed = None
        return _FailureListing(source.text, given, in_input, program, printed)
    printed = printed_module(source.module, program)
    carried: dict[str, list[int]] = {}
    for op in program.ops:
        where = location_text(op.location)
        line = printed.line_of_op(op.id)
        if where in locations and line is not None:
            carried.setdefault(where, []).append(line)
    caption = (
        f"{source.name}, as `smalto infer` prints it (its ops carry their Python lines as "
        "locations); the lines of the ops at the kernel lines named above are marked."
    )
    return _FailureListing(printed.text, caption, carried, program, printed)


def _diagnosis_locations(conflict: object) -> list[str]:
    """The locations the diagnosis names: its requirements', then its edits' ops'."""
    locations = list(getattr(conflict, "locations", None) or [])
    for edit in getattr(conflict, "edits", None) or []:
        locations += [location for _, location in getattr(edit, "ops", None) or []]
    return list(dict.fromkeys(locations))


def _clashes(conflict: object, program: Program | None, arch: tuple[int, int]) -> list[Clash]:
    if conflict is None or program is None:
        return []
    core = list(getattr(conflict, "core", None) or [])
    if not core:
        core = [r.element for r in getattr(conflict, "requirements", None) or []]
    try:
        return conflict_clashes(program, core, arch)
    except Exception:  # noqa: BLE001 -- a picture must not cost the page its diagnosis
        return []


def _place(location: str, listing: _FailureListing) -> str:
    lines = listing.lines.get(location)
    text = html.escape(location)
    return f'<a href="#L{lines[0]}">{text}</a>' if lines else text


def _diagnosis(conflict: object, listing: _FailureListing) -> list[str]:
    out = ['<section id="diagnosis"><h2>These requirements cannot all hold</h2><table>']
    out.append("<tr><th>where</th><th>op</th><th>requirement</th></tr>")
    for requirement in getattr(conflict, "requirements", []):
        out.append(
            f"<tr><td>{_place(requirement.location, listing)}</td><td><code>"
            f"{html.escape(requirement.op)}</code></td><td>{html.escape(requirement.text)}</td></tr>"
        )
    out.append("</table>")
    derivations = getattr(conflict, "derivations", [])
    if derivations:
        out.append("<h3>Where the values' layouts come from</h3><ul>")
        out += [f"<li>{html.escape(d)}</li>" for d in derivations]
        out.append("</ul>")
    out.append("</section>")
    return out


# The pictures of a clash: a few rows of the array, enough to tell the layouts apart.
CLASH_PICTURE_ROWS = 32
CLASH_PICTURE_COLS = 16


def _clash_section(clashes: list[Clash], listing: _FailureListing) -> list[str]:
    """The values of the conflict, each in the layout each side wants, side by side."""
    out = ['<section id="clash"><h2>The layouts in conflict</h2>']
    for number, clash in enumerate(clashes, 1):
        names = [listing.name(side.value) for side in clash.sides]
        title = clash.title.format(*names)
        out.append(f'<div class="clash" id="clash-{number}"><h3>{html.escape(title)}</h3>')
        out.append('<div class="sides">')
        for side, name in zip(clash.sides, names, strict=True):
            dims = "x".join(map(str, side.shape))
            out.append(
                f"<figure><figcaption><b>{html.escape(name)}</b> ({dims} "
                f"{html.escape(side.element_type)}) as <b>{html.escape(side.layout_name)}</b>"
                f"<br><small>wanted by {html.escape('; '.join(side.wanted_by))}</small>"
                "</figcaption>"
            )
            try:
                grid = _side_picture(side)
            except ValueError as error:  # a layout we cannot draw: say so, keep the page
                grid = None
                out.append(f"<p>(no picture: {html.escape(str(error))})</p>")
            if grid is not None:
                data = base64.b64encode(render([grid], "png", PICTURE_DPI)).decode("ascii")
                alt = html.escape(f"{name} as {side.layout_name}")
                out.append(f'<img src="data:image/png;base64,{data}" alt="{alt}">')
            elif isinstance(side.layout, Reg) and side.layout.is_splat:
                out.append("<p>(a splat: one value in every thread)</p>")
            out.append("</figure>")
        out.append("</div></div>")
    out.append("</section>")
    return out


def _side_picture(side: Side) -> Grid | None:
    entry = Pictured(
        "",
        side.layout,
        side.layout,
        f"{side.layout_name}",
        side.shape,
        side.element_type,
        side.bitwidth,
        side.layout.swizzle or 16 if isinstance(side.layout, Smem) else 16,
        memory_order(side.strides, len(side.layout.tiling))
        if isinstance(side.layout, Smem) and side.layout.tiling
        else None,
    )
    return picture(entry, rows=CLASH_PICTURE_ROWS, cols=CLASH_PICTURE_COLS)


def _suggestion(conflict: object, sources: Sources) -> list[str]:
    suggestions = list(getattr(conflict, "suggestions", None) or [])
    suggestion = getattr(conflict, "suggestion", None)
    if not suggestions and suggestion:
        suggestions = [suggestion]
    out = ['<section id="suggestion"><h2>Suggestion</h2>']
    if suggestions:
        out.append("<ul>" + "".join(f"<li>{html.escape(str(s))}</li>" for s in suggestions))
        out.append("</ul>")
    else:
        out.append("<p>(none)</p>")
    edits = getattr(conflict, "edits", None) or []
    lines = []
    for edit in edits:
        for _, location in getattr(edit, "ops", None) or []:
            line = source_line(location, sources)
            pallas = getattr(edit, "pallas", None)
            if line is not None and pallas:
                lines.append(
                    f"<li><code>{html.escape(location)}</code>: <code>{html.escape(line)}</code>"
                    f" &rarr; <code>{html.escape(pallas)}</code></li>"
                )
    if lines:
        out.append("<p>The verified edits, at their lines:</p><ul>" + "".join(lines) + "</ul>")
    out.append("</section>")
    return out


def _source_section(conflict: object, source: Input, sources: Sources) -> list[str]:
    excerpts = _python_excerpts(getattr(conflict, "locations", []), source, sources)
    note = sources.missing_note()
    if not excerpts and note is None:
        return []
    out = ['<section id="source"><h2>Source</h2>', *excerpts]
    if note is not None:
        out.append(f'<p class="note">{html.escape(note)}</p>')
    out.append("</section>")
    return out


def _input_lines(locations: list[str], source: Input) -> dict[str, list[int]]:
    """The locations that are lines of the input module: location -> [line]."""
    lines = {}
    for location in locations:
        file, _, rest = location.rpartition(":")
        file, _, line = file.rpartition(":")
        if file in (*source.files, source.name) and line.isdigit() and rest.isdigit():
            lines[location] = [int(line)]
    return lines


def _python_excerpts(locations: list[str], source: Input, sources: Sources) -> list[str]:
    """The source lines of the locations in other files (the user's Python)."""
    out = []
    for location in locations[:8]:
        file, _, rest = location.rpartition(":")
        file, _, line = file.rpartition(":")
        if file in (*source.files, source.name) or not line.isdigit():
            continue
        text = sources.line(file, int(line))
        if text is None:
            continue
        out.append(f"<p><code>{html.escape(location)}</code></p>")
        out.append(f'<pre class="module">{html.escape(text)}</pre>')
    return out
