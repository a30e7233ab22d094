"""A fix outside the function being fixed is made only where the script's other functions
that use what it changes still lower as they did.

``smalto fix SCRIPT.py:FUNCTION`` verifies its edits by lowering FUNCTION. An
edit of a helper that another function of the file shares (``smalto.source.
script_uses``) changes that function too: each such function is lowered with
the same arguments, as the script was and as it would be edited. A function
that lowered before and would not after refuses the edit; so does one that
cannot be lowered with those arguments (smalto cannot tell it still lowers).
One that already failed has nothing to lose.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from smalto.jax.lowering import KernelLoweringError, lower
from smalto.source.fix_edits import SourceEdit, apply_parts
from smalto.source.script_uses import shared_definitions
from smalto.source.scripts import ScriptError


class Lowers(enum.Enum):
    YES = "lowers"
    NO = "fails"  # a kernel that fails to lower with these arguments
    UNKNOWN = "cannot be lowered with these arguments"  # not a kernel for them


# Runs the script's text (the edited one) in the file's place for a reason said first;
# returns what it defined (raises ``ScriptError``).
Run = Callable[[str, str], dict[str, Any]]


@dataclass
class OtherFunctions:
    """The script's other functions, lowered before and after an edit that reaches them."""

    function: str  # the function being fixed
    args: tuple[Any, ...]
    arch: tuple[int, int] | None
    run: Run
    _before: dict[tuple[str, str], Lowers] = field(default_factory=dict)

    def refusal(self, text: str, namespace: dict[str, Any], edit: SourceEdit) -> str | None:
        """Why ``edit`` of ``text`` (whose run defined ``namespace``) is not made, or None:
        every other function using what it changes still lowers as it did."""
        lines = {line for p in edit.parts for line in range(p.span.line, p.span.end_line + 1)}
        try:
            shared = shared_definitions(text, lines, self.function)
        except SyntaxError:
            return None
        if not shared:
            return None
        users = list(dict.fromkeys(g for s in shared for g in s.users))
        edited = apply_parts(text, edit.parts)
        changed = ", ".join(s.name for s in shared)
        try:
            after_namespace = self.run(
                edited,
                f"again, with this edit, to check that {_listed(users)} still "
                f"lower{'s' * (len(users) == 1)}",
            )
        except ScriptError:
            return f"it changes {changed}, and the script as edited does not load"
        for user in users:
            before = self._before.get((text, user))
            if before is None:
                before = self._before[text, user] = self._lowers(namespace.get(user))
            if before is Lowers.NO:
                continue  # it did not lower: nothing of it to keep
            if before is Lowers.UNKNOWN:
                return (
                    f"it changes {changed}, which {user} uses too, and {user} "
                    f"{Lowers.UNKNOWN.value} to check it still lowers"
                )
            if self._lowers(after_namespace.get(user)) is not Lowers.YES:
                return (
                    f"it changes {changed}, which {user} uses too, and {user} would no longer lower"
                )
        return None

    def _lowers(self, fn: Any) -> Lowers:
        if not callable(fn):
            return Lowers.UNKNOWN
        try:
            lower(fn, *self.args, arch=self.arch, by="smalto")
        except KernelLoweringError as failed:
            return Lowers.NO if failed.stage in ("inference", "after inference") else Lowers.UNKNOWN
        return Lowers.YES


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
