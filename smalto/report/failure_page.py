"""The page of a failed inference (``smalto infer --report PAGE`` on a kernel with no
layouts): what failed, the diagnosis (the fix first), pictures of the layouts in
conflict side by side, the user's source lines, and the module with the lines the
diagnosis names marked (also where the ops are located in the user's Python, as
Pallas captures them). The page of a successful inference is ``smalto.report.layouts_page``'s;
the two share its style and listing.
"""

from __future__ import annotations

import base64
import dataclasses
import html
from dataclasses import dataclass
from pathlib import Path

from smalto.basics.inputs import Input
from smalto.basics.mlir import in_context
from smalto.basics.writing import write_file
from smalto.draw.render import Grid, Panels, figure_size, render
from smalto.hw.values import Reg, Smem
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.report.conflict_layouts import Clash, Side, conflict_clashes
from smalto.report.failure_json import source_line

# Pictures in the report show a part of the array: enough rows for all four warps.
from smalto.report.layouts_page import (
    PAGE_SCRIPT,
    PAGE_STYLE,
    PICTURE_DPI,
    Pictured,
    listing_html,
    memory_order,
    picture,
)
from smalto.report.printed import PrintedModule, printed_module
from smalto.rules import consumers
from smalto.source.files import Sources
from smalto.source.locations import location_text


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
    problems = list(getattr(conflict, "problems", None) or ([conflict] if conflict else []))
    with in_context(source.module):
        listing = _failurelisting_html(conflict, source)
        clashes = [_clashes(problem, listing.program, arch) for problem in problems]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}: no layouts</title><style>{PAGE_STYLE}</style>",
        f"<script>{PAGE_SCRIPT}</script></head><body>",
        f"<h1>No layouts for {html.escape(title)}</h1>",
        '<section id="error"><h2>What failed</h2>',
        f'<p class="error">{html.escape(message.splitlines()[0])}</p>',
    ]
    if len(problems) > 1:
        out.append(f"<p>the kernel has {len(problems)} problems, each with its own fix:</p><ul>")
        out += [
            f'<li><a href="#problem-{n}">problem {n} of {len(problems)}:</a> '
            f"{html.escape(_gist(problem))}</li>"
            for n, problem in enumerate(problems, 1)
        ]
        out.append("</ul>")
    # What the message says beyond the diagnosis (a rescue tried in vain): the terminal
    # prints it, so the page does.
    said: set[str] = set()
    if conflict is not None and hasattr(conflict, "message"):
        said = set(conflict.message().splitlines())
    beyond = [
        line for line in message.splitlines()[1:] if conflict is not None and line not in said
    ]
    if conflict is None:
        # (With no diagnosis to tell apart, what smalto said beyond it, its notes.)
        beyond += [str(note) for note in getattr(error, "notes", ())]
    out += [f'<p class="note">{html.escape(line)}</p>' for line in beyond if line.strip()]
    out.append("</section>")
    if conflict is not None:
        for number, (problem, found) in enumerate(zip(problems, clashes, strict=True), 1):
            if len(problems) > 1:
                out.append(
                    f'<h2 id="problem-{number}" class="problem">problem {number} of '
                    f"{len(problems)}:</h2>"
                )
            suffix = f"-{number}" if len(problems) > 1 else ""
            out += _problem(problem, found, listing, sources, suffix)
        out += _source_section(conflict, source, sources)
    else:
        out.append('<section id="diagnosis"><h2>Diagnosis</h2>')
        out.append(f'<div class="why">{html.escape(message)}</div></section>')
    out.append('<section id="module"><h2>The module</h2>')
    out.append(f"<p>{html.escape(listing.caption)}</p>")
    out.append(listing_html(listing.text, listing.marked))
    out.append("</section></body></html>")
    write_file(path, "\n".join(out))


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
        program = read_program(source.module, consumers())
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


def _gist(problem: object) -> str:
    """A problem in one line: what is wrong, else its code's title."""
    headline = getattr(problem, "headline", None)
    if headline:
        return str(headline)
    code_line = getattr(problem, "code_line", None)
    return code_line() if callable(code_line) else ""


def _problem(
    problem: object,
    clashes: list[Clash],
    listing: _FailureListing,
    sources: Sources,
    suffix: str,
) -> list[str]:
    """One problem as the terminal says it (what is wrong, the fixes, why, the notes, the
    code), with the layouts in conflict drawn after why."""
    out: list[str] = []
    headline = getattr(problem, "headline", None)
    if headline:
        out.append(f'<p class="headline"><b>what is wrong:</b> {html.escape(str(headline))}</p>')
    out += _suggestion(problem, sources, suffix)
    out += _diagnosis(problem, listing, suffix)
    if clashes:
        out += _clash_section(clashes, listing, suffix)
    notes = _notes(problem)
    if notes:
        out.append(f'<section id="notes{suffix}"><h2>Notes</h2>')
        out += [f'<p class="note">note: {html.escape(note)}</p>' for note in notes]
        out.append("</section>")
    code_line = getattr(problem, "code_line", None)
    if callable(code_line):
        out.append(f'<p class="code"><code>{html.escape(code_line())}</code></p>')
    return out


def _notes(problem: object) -> list[str]:
    """The notes the terminal prints after why (``ConflictReport.message``): all but one
    the suggestion already says, where no fix was verified."""
    fixes = getattr(problem, "fixes", None) or []
    said = "" if fixes else str(getattr(problem, "suggestion", None) or "")
    notes = [str(n) for n in getattr(problem, "notes", None) or [] if str(n) not in said]
    faster = getattr(problem, "faster", None)
    if faster and not fixes:  # (else said first, among the fixes)
        notes.append(f"the fast alternative: {faster}")
    return notes


def _diagnosis(conflict: object, listing: _FailureListing, suffix: str = "") -> list[str]:
    out = [f'<section id="diagnosis{suffix}"><h2>Why: these requirements cannot all hold</h2>']
    out.append("<table><tr><th>where</th><th>op</th><th>requirement</th></tr>")
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
    origins = getattr(conflict, "origins", [])
    if origins:  # what `smalto infer --verbose` adds: where each value is defined
        out.append("<h3>The values involved</h3><ul>")
        out += [f"<li>{html.escape(o)}</li>" for o in origins]
        out.append("</ul>")
    out.append("</section>")
    return out


# The pictures of a clash: a few rows of the array, enough to tell the layouts apart.
CLASH_PICTURE_ROWS = 32
CLASH_PICTURE_COLS = 16


def _clash_section(clashes: list[Clash], listing: _FailureListing, suffix: str = "") -> list[str]:
    """The values of the conflict, each in the layout each side wants, side by side in one
    picture: one scale for all sides (the same cell size, one image the page scales as a
    whole), so that the layouts compare cell for cell."""
    out = [f'<section id="clash{suffix}"><h2>The layouts in conflict</h2>']
    for number, clash in enumerate(clashes, 1):
        names = [listing.name(side.value) for side in clash.sides]
        title = clash.title.format(*names)
        out.append(
            f'<div class="clash" id="clash{suffix}-{number}"><h3>{html.escape(title)}</h3><ul>'
        )
        grids: list[Grid] = []
        drawn: list[str] = []
        window = _window(clash)
        for side, name in zip(clash.sides, names, strict=True):
            dims = "x".join(map(str, side.shape))
            caption = (
                f"<li><b>{html.escape(name)}</b> ({dims} {html.escape(side.element_type)}) as "
                f"<b>{html.escape(side.layout_name)}</b>: wanted by "
                f"{html.escape('; '.join(side.wanted_by))}"
            )
            try:
                grid = _side_picture(side, window)
            except ValueError as error:  # a layout we cannot draw: say so, keep the page
                grid = None
                caption += f" (no picture: {html.escape(str(error))})"
            if grid is None and isinstance(side.layout, Reg) and side.layout.is_splat:
                caption += " (a splat: one value in every thread; no picture)"
            if grid is not None:
                grids.append(dataclasses.replace(grid, title=f"{name}: {grid.title}"))
                drawn.append(f"{name} as {side.layout_name}")
            out.append(caption + "</li>")
        out.append("</ul>")
        if grids:
            data = base64.b64encode(render(_arranged(_one_scale(grids)), "png", PICTURE_DPI))
            alt = html.escape(", next to ".join(drawn))
            out.append(
                f'<figure class="sides"><img src="data:image/png;base64,{data.decode("ascii")}" '
                f'alt="{alt}"></figure>'
            )
        out.append("</div>")
    out.append("</section>")
    return out


# A register value next to the SMEM ref it moves to or from, at one shape: the same
# corner of both (enough rows for two row tiles, columns for four 16-byte chunks).
SHARED_WINDOW = (16, 32)


def _window(clash: Clash) -> tuple[int, int] | None:
    """One window for every side where the sides are a ref and a register value of one
    shape, so that an element sits in the same cell in both pictures."""
    shapes = {side.shape for side in clash.sides}
    if len(shapes) == 1 and any(isinstance(side.layout, Smem) for side in clash.sides):
        return SHARED_WINDOW
    return None


def _side_picture(side: Side, window: tuple[int, int] | None = None) -> Grid | None:
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
    if window is not None:
        return picture(entry, rows=window[0], cols=window[1], smem_window=window)
    return picture(entry, rows=CLASH_PICTURE_ROWS, cols=CLASH_PICTURE_COLS)


# Wider than this (pixels at the drawing's base resolution), sides go one above the other:
# side by side, the page would shrink them past reading.
SIDE_BY_SIDE_PX = 1100


def _arranged(grids: list[Grid]) -> Panels:
    """Side by side where they fit the page's width, else one above the other."""
    beside: Panels = [tuple(grids)]
    return beside if figure_size(beside)[0] <= SIDE_BY_SIDE_PX else list(grids)


def _one_scale(grids: list[Grid]) -> list[Grid]:
    """The grids with one cell size, the largest any needs (for its labels)."""
    width = max(grid.cell_px[0] for grid in grids)
    height = max(grid.cell_px[1] for grid in grids)
    return [dataclasses.replace(grid, cell_px=(width, height)) for grid in grids]


def _suggestion(conflict: object, sources: Sources, suffix: str = "") -> list[str]:
    """The fixes as the terminal prints them (``fix:``, ``or:``, each with the line it
    changes), then each verified edit at its source line."""
    out = [f'<section id="suggestion{suffix}"><h2>Fix</h2>']
    fix_lines = getattr(conflict, "fix_lines", None)
    lines = fix_lines() if callable(fix_lines) else []
    if lines:
        out.append(f'<div class="why">{html.escape(chr(10).join(lines))}</div>')
    else:
        out.append("<p>(no verified fix)</p>")
    edits = getattr(conflict, "edits", None) or []
    at_lines = []
    for edit in edits:
        for _, location in getattr(edit, "ops", None) or []:
            line = source_line(location, sources)
            pallas = getattr(edit, "pallas", None)
            if line is not None and pallas:
                at_lines.append(
                    f"<li><code>{html.escape(location)}</code>: <code>{html.escape(line)}</code>"
                    f" &rarr; <code>{html.escape(pallas)}</code></li>"
                )
    if at_lines:
        out.append("<p>The verified edits, at their lines:</p><ul>" + "".join(at_lines) + "</ul>")
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
