"""A failed inference as data: ``smalto infer --json`` on a file with no layouts.

The diagnosis (``InferenceError.conflict``, a ``smalto.constraints.conflict_report.ConflictReport``)
holds the facts; this module reads them, and only through attributes it looks up
with a default (the diagnosis grows, and a face must not break when a field
moves), into one JSON object per file: JAX's sentence, the requirements that
cannot hold together with each op, location and source line, the values, the
suggestion and the verified edits, and the notes.
"""

from __future__ import annotations

import re
from typing import Any

from smalto.source.files import Sources

_LOCATION = re.compile(r"^(.+):(\d+):(\d+)$")


def failure_json(
    file: str, arch: tuple[int, int], error: BaseException, sources: Sources | None = None
) -> dict[str, Any]:
    """The JSON object for ``file``, whose inference raised ``error`` (an
    ``InferenceError``, or a ``NotImplementedError`` for an op smalto has no rule for)."""
    sources = sources if sources is not None else Sources()
    message = str(error) or type(error).__name__
    conflict = getattr(error, "conflict", None)
    document: dict[str, Any] = {
        "file": file,
        "arch": f"{arch[0]}.{arch[1]}",
        "ok": False,
        "error": message.splitlines()[0],
        "unsupported": isinstance(error, NotImplementedError),
        "phrase": getattr(error, "phrase", None),
        "message": message,
        **_problem(conflict, sources),
    }
    # Every independent problem (the first one's fields are also the document's own).
    problems = getattr(conflict, "problems", None) or ([conflict] if conflict else [])
    document["problems"] = [_problem(problem, sources) for problem in problems]
    notes = [str(note) for note in getattr(error, "notes", ())]
    missing = sources.missing_note()
    if missing is not None:
        notes.append(missing)
    document["notes"] = notes
    return document


def _problem(conflict: object, sources: Sources) -> dict[str, Any]:
    """One problem of the diagnosis: its requirements, values, fixes and edits."""
    return {
        "requirements": [
            {
                "op": requirement.op,
                "location": requirement.location,
                "text": requirement.text,
                "source": source_line(requirement.location, sources),
            }
            for requirement in getattr(conflict, "requirements", None) or []
        ],
        "values": [_value(text) for text in getattr(conflict, "values", None) or []],
        "derivations": list(getattr(conflict, "derivations", None) or []),
        "origins": list(getattr(conflict, "origins", None) or []),
        "suggestion": getattr(conflict, "suggestion", None),
        "edits": [_edit(edit, sources) for edit in getattr(conflict, "edits", None) or []],
        "edits_tried": getattr(conflict, "edits_tried", 0),
        "edits_lowered": getattr(conflict, "edits_lowered", None),
        "minimal": getattr(conflict, "minimal", None),
        "fixes": list(getattr(conflict, "fixes", None) or []),
        # Verified changes of what the kernel computes, for the author to choose among.
        "choices": list(getattr(conflict, "choices", None) or []),
        "diagnosis_notes": list(getattr(conflict, "notes", None) or []),
    }


def source_line(location: str, sources: Sources) -> str | None:
    """The source line at ``location`` (``kernels.py:88:12``), without its indentation;
    None where the location names no line of a file found."""
    match = _LOCATION.match(location)
    if match is None:
        return None
    line = sources.line(match[1], int(match[2]))
    return None if line is None else line.strip()


def _value(text: str) -> dict[str, str | None]:
    """``%12 : vector<...>`` (or `` `s` (%12) : vector<...>``) as its name and type."""
    name, colon, type_ = text.rpartition(" : ")
    if not colon:
        return {"name": text, "type": None}
    return {"name": name, "type": type_}


def _edit(edit: object, sources: Sources) -> dict[str, Any]:
    """One verified edit (``smalto.diagnose.suggest.SuggestedEdit``) as JSON."""
    fields = (
        "kind",
        "text",
        "pallas",
        "old",
        "new",
        "attribute",
        "old_attribute",
        "new_attribute",
        "value",
        "needs_smalto",
        "changes_meaning",
    )
    document: dict[str, Any] = {name: getattr(edit, name, None) for name in fields}
    document["ops"] = [
        {"op": op, "location": location, "source": source_line(location, sources)}
        for op, location in getattr(edit, "ops", None) or []
    ]
    return document
