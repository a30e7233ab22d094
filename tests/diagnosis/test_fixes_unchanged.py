"""The verified fixes of every failing kernel of ``tests/unsat`` are the ones recorded in
``verified_fixes.json``: making the words faster (issue #52) changed none of them.

The record holds, per module, each problem's fixes and choices as the message words
them (each verified: the edited module inferred, its layouts passed by the checker).
It was written by the code before issue #52's changes (commit fc88a76); a change
that means to change a kernel's fixes rewrites it, and the diff shows which::

    .venv/bin/python tests/diagnosis/test_fixes_unchanged.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
UNSAT = HERE.parent / "unsat"
RECORD = HERE / "verified_fixes.json"
MODULES = sorted(UNSAT.glob("*.mlir"))


def fixes_of(path: Path) -> list[list[str]] | None:
    """Each problem's verified fixes, then its choices, in words; None where it infers; the
    exception's name where the pass refuses the module outright (an op it cannot take)."""
    sys.path.insert(0, str(HERE.parent / "helpers"))
    import reference

    import smalto

    text = path.read_text()
    context = reference.make_context()
    module = reference.parse(text, context)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with context:
                smalto.infer_layout(module, arch=reference.text_arch(text))
        except smalto.InferenceError as error:
            str(error)  # (worded when first read)
            if error.conflict is None:
                return []
            return [[*p.fixes, *p.choices] for p in error.conflict.problems]
        except (NotImplementedError, ValueError) as error:
            return [[type(error).__name__]]
    return None


def test_the_record_covers_every_failing_kernel() -> None:
    recorded = json.loads(RECORD.read_text())
    assert sorted(recorded) == [p.name for p in MODULES]
    # Most have fixes to hold: a record of empty lists would hold nothing.
    assert sum(bool(fixes and any(fixes)) for fixes in recorded.values()) > 20


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_the_fixes_are_the_recorded_ones(path: Path) -> None:
    assert fixes_of(path) == json.loads(RECORD.read_text())[path.name]


if __name__ == "__main__":
    RECORD.write_text(json.dumps({p.name: fixes_of(p) for p in MODULES}, indent=1) + "\n")
    print(f"wrote {RECORD}")
