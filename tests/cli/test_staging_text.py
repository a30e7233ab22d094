"""The staged epilogue's text (``smalto.source.staging_text``): built so that no name
changes binding, or refused with one line; the statement's comment, indentation and line
ends kept; a store over several lines taken whole."""

from __future__ import annotations

import ast

from smalto.source.staging_text import Refused, Staged, Staging

HEAD = (
    "from jax.experimental import pallas as pl\n"
    "from jax.experimental.pallas import mosaic_gpu as plgpu\n\n"
)


def _staged(body: str, line: int, column: int, store: bool = True) -> Staged | Refused:
    text = HEAD + body
    return Staging(text).staged(line + 3, column, store, "")


def _apply(body: str, staged: Staged) -> str:
    lines = (HEAD + body).split("\n")
    lines[staged.first - 1 : staged.last] = [staged.replacement]
    return "\n".join(lines)


def test_a_walrus_in_the_value_is_evaluated_where_written() -> None:
    body = "def k(o, acc):\n    o[...] = (s := acc + 1.0).astype(int)  # keep\n    return s\n"
    staged = _staged(body, 2, 4)
    assert isinstance(staged, Staged)
    edited = _apply(body, staged)
    assert "    o_value = (s := acc + 1.0).astype(int)\n" in edited
    assert "        o_smem[...] = o_value  # keep\n" in edited
    # The walrus binds `s` in `k` itself, not in the nested function.
    tree = ast.parse(edited)
    nested = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name != "k"]
    assert nested and not any(isinstance(n, ast.NamedExpr) for f in nested for n in ast.walk(f))


def test_a_store_over_several_lines_is_taken_whole_with_its_indentation() -> None:
    body = "def k(o, acc):\n  o.at[0][:, pl.ds(0, 64)] = (\n      acc + 1\n  )\n"
    staged = _staged(body, 2, 2)
    assert isinstance(staged, Staged) and (staged.first, staged.last) == (5, 7)
    edited = _apply(body, staged)
    ast.parse(edited)
    # (Indented by the file's own step: two spaces in a file indented by two.)
    assert "  def _store_o_through_smem(o_smem):\n    o_smem[...] = acc + 1\n" in edited
    assert "  pl.run_scoped(\n    _store_o_through_smem,\n" in edited
    assert "plgpu.copy_smem_to_gmem(o_smem, o.at[0].at[:, pl.ds(0, 64)])" in edited


def test_line_ends_are_the_files() -> None:
    text = (HEAD + "def k(o, acc):\n    o[...] = acc\n").replace("\n", "\r\n")
    staged = Staging(text).staged(5, 4, True, "")
    assert isinstance(staged, Staged)
    assert "\r\n" in staged.replacement and "\n" not in staged.replacement.replace("\r\n", "")


def test_what_cannot_move_is_refused_with_a_reason() -> None:
    cases = [
        ("def k(o, i):\n    o[(j := i)] = 1\n", 2, 4, True, "index binds a name"),
        ("def k(o):\n    o[...] = (yield)\n", 2, 4, True, "yields"),
        ("class K:\n    o[...] = 1\n", 2, 4, True, "not written in a function"),
        ("def k(o, x):\n    o[...] = x; x = 2\n", 2, 4, True, "no statement of its own"),
        ("def k(b, c):\n    y = b[0] if c else 0\n", 2, 8, False, "one branch"),
        ("def k(b, c):\n    y = c or b[0]\n", 2, 13, False, "`and`/`or`"),
        ("def k(b):\n    y = [b[j] for j in range(2)]\n", 2, 9, False, "a comprehension"),
        ("def k(b):\n    y = (lambda j: b[j])(0)\n", 2, 19, False, "a lambda"),
        ("def k(b):\n    if b[0] > 0:\n        pass\n", 2, 7, False, "no statement of its own"),
    ]
    for body, line, column, store, reason in cases:
        found = _staged(body, line, column, store)
        assert isinstance(found, Refused), body
        assert reason in found.reason, (body, found.reason)


def test_fresh_names_are_unused_in_the_file() -> None:
    body = "def k(o, acc):\n    o_smem = 1\n    o[...] = acc + o_smem\n"
    staged = _staged(body, 3, 4)
    assert isinstance(staged, Staged)
    assert "def _store_o_through_smem(o_smem_2):" in staged.replacement
    assert "o_smem_2[...] = acc + o_smem" in staged.replacement
