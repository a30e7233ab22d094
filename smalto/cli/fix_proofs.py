"""What ``smalto fix`` says of its proofs: each edit's own (JAX's trace, the staged
epilogue's construction, or its own run for an edit that changes the ops), the run of
both kernels in JAX's Mosaic GPU interpreter, the transfers it did not stage and why;
and the same as JSON (``smalto fix --json``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from smalto.cli.output import note

if TYPE_CHECKING:
    from smalto.jax.fixing import Applied, FixOutcome

# ``--json``'s "proofs" entries.
TRACE, CONSTRUCTION, RUN = "trace", "construction", "interpreter"


def said_not_staged(outcome: FixOutcome) -> None:
    """A note for each transfer the staged epilogue was not written for, and why."""
    for line in outcome.not_staged:
        note(line)


def said_run(outcome: FixOutcome, report: TextIO) -> None:
    """The run's line: what running both kernels in the interpreter showed, or why they
    were not run."""
    if outcome.run is None:
        return
    print(
        f"proven by running: {outcome.run.said()}" if outcome.run.proven else outcome.run.said(),
        file=report,
    )


def refuted_words(outcome: FixOutcome) -> str:
    run = outcome.run
    why = run.why_not if run is not None else "the run failed"
    return (
        "not written: the fixed kernel does not compute what the original computes when "
        f"both run in JAX's Mosaic GPU interpreter ({why}); please report this to smalto"
    )


def edit_proofs(outcome: FixOutcome, applied: Applied) -> list[str]:
    """The proofs made of an edit: its own (JAX's trace; the staged epilogue's
    construction; for an edit that changes the ops, a keepdims statistic, its own run in
    the interpreter), and the run where it proved the whole."""
    from smalto.jax.staged_epilogue import STAGE

    if applied.by_running:
        return [RUN]  # (its own run; where other edits came first, the whole's run too)
    proofs = [CONSTRUCTION if applied.edit.kind == STAGE else TRACE]
    if outcome.run is not None and outcome.run.proven:
        proofs.append(RUN)
    return proofs


def as_json(outcome: FixOutcome | None, target: str, status: int, written: bool) -> str:
    """``smalto fix --json``'s object: the edits made (each with its ``fix`` object and the
    proofs made of it), the run in the interpreter, what was not made and why."""
    if outcome is None:
        return json.dumps({"target": target, "status": status, "written": False, "edits": []})
    edits = [
        {
            "code": applied.edit.code,
            "kind": applied.edit.kind,
            "text": applied.edit.text,
            "why": applied.why,
            "proofs": edit_proofs(outcome, applied),
            "proven_by": applied.proven_by,
            "fix": applied.edit.as_json(),
        }
        for applied in outcome.applied
    ]
    return json.dumps(
        {
            "target": target,
            "status": status,
            "written": written,
            "lowers": outcome.lowers,
            "needs_smalto": outcome.needs_smalto,
            "edits": edits,
            "run": outcome.run.as_json() if outcome.run is not None else None,
            "refuted": outcome.refuted,
            "not_made": [
                {"text": held.edit.text, "reason": held.reason} for held in outcome.held_back
            ],
            "not_staged": list(outcome.not_staged),
            # Portable edits JAX's pass took but the run did not prove (not made), and why.
            "unproven": list(dict.fromkeys(outcome.unproven)),
            # Where the kernel compiles only with smalto: the statistics kept with a unit
            # dim that JAX's lowering cannot compute on.
            "keepdims": list(outcome.keepdims),
            # Where the edit of those statistics stops following one (why none was made).
            "keepdims_not_followed": outcome.keepdims_not_followed or None,
        },
        indent=2,
    )
