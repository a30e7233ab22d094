"""The facts behind a failed inference, for tools: ``InferenceError.conflict``.

A conflict is a set of requirements that cannot hold together, each with the
op that imposed it and where; the diagnosis (``smalto.diagnose``) adds what
the values were forced to and the edits that resolve it. A rule that meets a
layout its value cannot take reports that one requirement alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smalto.constraints import Element


@dataclass(frozen=True)
class Requirement:
    """One requirement in a conflict: which op imposed it, where, and what it says."""

    op: str
    location: str
    text: str
    element: Element = field(repr=False)


@dataclass(frozen=True)
class ConflictReport:
    """The facts behind an ``InferenceError``, for tools."""

    requirements: list[Requirement]
    values: list[str]  # "%12 : vector<64x64xf32>" for each value involved
    derivations: list[str]  # "%12 is WGMMA because ..."
    suggestion: str | None
    minimal: bool
    # Every element of the core (requirements with the same wording are listed once above).
    core: list[Element] = field(default_factory=list, repr=False)
    # Where each value involved is defined: "%12 : vector<...> is defined by `op` at k.py:3:4".
    origins: list[str] = field(default_factory=list)
    # The single edits verified to make the kernel infer and check, best first
    # (``smalto.diagnose.suggest.SuggestedEdit``), and how many edits were tried.
    edits: list[Any] = field(default_factory=list)
    edits_tried: int = 0
    # Whether JAX's own dialect lowering took the first edit's answer too (None: not run,
    # the module has no launch to lower it in).
    edits_lowered: bool | None = None

    @property
    def ops(self) -> list[str]:
        return list(dict.fromkeys(r.op for r in self.requirements))

    @property
    def locations(self) -> list[str]:
        return list(dict.fromkeys(r.location for r in self.requirements))

    def message(self) -> str:
        lines = ["these requirements cannot all hold:"]
        lines += [f"  - {r.text}" for r in self.requirements]
        if self.derivations:
            lines.append("where:")
            lines += [f"  - {d}" for d in self.derivations]
        if self.origins:
            lines.append("the values involved:")
            lines += [f"  - {o}" for o in self.origins]
        if self.suggestion:
            lines.append(f"suggestion: {self.suggestion}")
        return "\n".join(lines)
