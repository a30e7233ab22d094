"""No function of the package is over 100 lines or of radon's complexity rank E or F
(a cyclomatic complexity over 30) unless ``function_size_allowed.txt`` names it with a
reason: a new one fails CI with its place and its figures. JAX's whole pass has nothing
above D.

An allowance names a function as ``path::qualified.name``, then its reason; one that no
longer needs it fails too (the list stays the list of what is left to split).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_rank, cc_visit
from radon.visitors import Class, Function

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = Path(__file__).with_name("function_size_allowed.txt")
MAX_LINES = 100
REFUSED_RANKS = frozenset("EF")


def _functions(blocks: list[Function | Class]) -> Iterator[tuple[str, Function]]:
    """Every function and method of ``blocks`` (radon's, of a module), closures and the
    methods of nested classes included, by qualified name."""
    for block in blocks:
        if isinstance(block, Class):
            # (Its methods are among the module's blocks already; a nested class's are not.)
            for inner in block.inner_classes:
                yield from _members(inner, f"{block.name}.")
            continue
        yield block.fullname, block
        yield from _closures(block, block.fullname)


def _members(cls: Class, prefix: str) -> Iterator[tuple[str, Function]]:
    for method in cls.methods:
        name = f"{prefix}{cls.name}.{method.name}"
        yield name, method
        yield from _closures(method, name)
    for inner in cls.inner_classes:
        yield from _members(inner, f"{prefix}{cls.name}.")


def _closures(function: Function, name: str) -> Iterator[tuple[str, Function]]:
    for closure in function.closures:
        inner = f"{name}.{closure.name}"
        yield inner, closure
        yield from _closures(closure, inner)


def _too_big(source: str) -> dict[str, str]:
    """The functions of ``source`` over the limits, by qualified name, with their figures."""
    found: dict[str, str] = {}
    for name, function in _functions(cc_visit(source)):
        lines = function.endline - function.lineno + 1
        rank = cc_rank(function.complexity)
        if lines > MAX_LINES or rank in REFUSED_RANKS:
            found[name] = f"{lines} lines, complexity {function.complexity} ({rank})"
    return found


@functools.cache
def _over_the_limits() -> dict[str, str]:
    return {
        f"{path.relative_to(ROOT)}::{name}": figures
        for path in sorted((ROOT / "smalto").rglob("*.py"))
        for name, figures in _too_big(path.read_text()).items()
    }


def _allowed() -> dict[str, str]:
    allowed: dict[str, str] = {}
    for line in ALLOWED.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            where, _, reason = line.partition(" ")
            allowed[where] = reason.strip()
    return allowed


def test_every_allowance_has_a_reason() -> None:
    assert all(_allowed().values()), "an allowance without a reason"


def test_no_new_function_is_over_100_lines_or_of_rank_e_or_f() -> None:
    allowed = _allowed()
    new = {where: figures for where, figures in _over_the_limits().items() if where not in allowed}
    assert not new, (
        "functions over 100 lines or of radon rank E/F (split them, or add them to "
        f"{ALLOWED.name} with a reason):\n" + "\n".join(f"{w}: {f}" for w, f in new.items())
    )


def test_no_allowance_is_stale() -> None:
    over = _over_the_limits()
    stale = sorted(where for where in _allowed() if where not in over)
    assert not stale, f"within the limits now, remove from {ALLOWED.name}: {stale}"


def test_the_limits_find_a_long_function_and_a_tangled_one() -> None:
    # (What the tests above would miss were the finder blind.)
    long = "def long():\n" + "    x = 1\n" * MAX_LINES
    tangled = "def tangled(x):\n" + "".join(
        f"    if x == {i}:\n        return {i}\n" for i in range(31)
    )
    method = "class C:\n    class D:\n        def m(self):\n" + "            x = 1\n" * MAX_LINES
    closure = "def outer():\n    def inner():\n" + "        x = 1\n" * MAX_LINES
    assert list(_too_big(long)) == ["long"]
    assert _too_big(tangled) == {"tangled": "63 lines, complexity 32 (E)"}
    assert list(_too_big(method)) == ["C.D.m"]
    assert list(_too_big(closure)) == ["outer.inner"]
    assert _too_big("def short():\n    return 1\n") == {}
