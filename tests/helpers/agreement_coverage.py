"""Which lines of the rules and the checker the agreement test leaves unreached.

``tests/rules/test_agreement_coverage.py`` runs the agreement test
(``tests/rules/test_rules_agree_with_checks.py``) in a subprocess under
``coverage`` and compares the lines of ``smalto/rules/`` and ``smalto/check/``
that neither half reached with an allow-list (``ALLOW_LIST``), in which each
unreached line is named with a reason: a branch the agreement test cannot
judge (an error path, a kernel the solver never solves) or one it does not yet.

The allow-list names lines by their text, under their file and the function
they are in, so that edits elsewhere do not move them:

    [smalto/rules/tmem.py :: _tmem_layout]
    reason: no TMEM layout fits the ref: inference fails before any layout is judged
        except ValueError as e:
        raise InferenceError(

(a statement spanning several lines is named by its first line; ``#`` starts
a comment line). ``python -m agreement_coverage`` (from ``tests/helpers``)
prints the sections that the unreached lines not on the list would need.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGREEMENT_TEST = "tests/rules/test_rules_agree_with_checks.py"
MEASURED = ("smalto/rules", "smalto/check")
ALLOW_LIST = ROOT / "tests" / "rules" / "agreement_coverage_allowed.txt"


@dataclass(frozen=True)
class Line:
    """An unreached line: its file (from the repository root), function and text."""

    path: str
    function: str
    number: int
    text: str


@dataclass
class Section:
    """The allow-list's lines of one function, and why they stay unreached."""

    path: str
    function: str
    reason: str = ""
    texts: list[str] = field(default_factory=list)
    at: int = 0  # the section's line in the allow-list


def run_under_coverage(data_file: Path, timeout: float = 500) -> None:
    """Runs the agreement test under ``coverage`` (lines, not branches) into ``data_file``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    # sys.monitoring (Python 3.12+) measures lines at a fraction of the tracer's cost.
    env.setdefault("COVERAGE_CORE", "sysmon")
    sources = ",".join(str(ROOT / p) for p in MEASURED)
    command = [
        sys.executable,
        "-m",
        "coverage",
        "run",
        f"--data-file={data_file}",
        f"--source={sources}",
        "-m",
        "pytest",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        AGREEMENT_TEST,
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise AssertionError(
            f"the agreement test failed under coverage:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
        )


def unreached(data_file: Path) -> list[Line]:
    """Every statement of the measured folders that the run left unreached."""
    import coverage

    cov = coverage.Coverage(data_file=str(data_file))
    cov.load()
    found = []
    for folder in MEASURED:
        for path in sorted((ROOT / folder).glob("*.py")):
            _, _, _, missing, _ = cov.analysis2(str(path))
            relative = path.relative_to(ROOT).as_posix()
            lines = path.read_text().splitlines()
            functions = _functions(relative)
            for number in missing:
                text = lines[number - 1].strip()
                found.append(Line(relative, functions.get(number, "<module>"), number, text))
    return found


@cache
def _functions(relative: str) -> dict[int, str]:
    """Each line's innermost enclosing function or class, by qualified name."""
    tree = ast.parse((ROOT / relative).read_text())
    owner: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                end = child.end_lineno or child.lineno
                for number in range(child.lineno, end + 1):
                    owner[number] = name
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return owner


def read_allow_list(path: Path = ALLOW_LIST) -> list[Section]:
    sections: list[Section] = []
    for at, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            where, _, function = line[1:-1].partition(" :: ")
            sections.append(Section(where.strip(), function.strip(), at=at))
        elif not sections:
            raise ValueError(f"{path.name}:{at}: a line before the first [file :: function]")
        elif line.startswith("reason:"):
            sections[-1].reason = line.removeprefix("reason:").strip()
        else:
            sections[-1].texts.append(line)
    return sections


@dataclass
class Comparison:
    unexplained: list[Line]  # unreached, not on the list
    stale: list[str]  # on the list, no longer an unreached line
    no_reason: list[str]  # sections without a reason


def compare(lines: list[Line], sections: list[Section]) -> Comparison:
    allowed: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in sections:
        allowed[(s.path, s.function)].update(s.texts)
    unexplained = [x for x in lines if x.text not in allowed.get((x.path, x.function), ())]
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for x in lines:
        seen[(x.path, x.function)].add(x.text)
    stale = [
        f"line {s.at}: [{s.path} :: {s.function}] {text}"
        for s in sections
        for text in s.texts
        if text not in seen.get((s.path, s.function), ())
    ]
    no_reason = [f"line {s.at}: [{s.path} :: {s.function}]" for s in sections if not s.reason]
    return Comparison(unexplained, stale, no_reason)


def as_sections(lines: list[Line]) -> str:
    """``lines`` in the allow-list's form, a reason to write under each function."""
    grouped: dict[tuple[str, str], list[Line]] = defaultdict(list)
    for x in lines:
        grouped[(x.path, x.function)].append(x)
    out = []
    for (path, function), group in grouped.items():
        out.append(f"[{path} :: {function}]")
        out.append("reason: ")
        out.extend(f"    {x.text}" for x in group)
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "coverage"
        run_under_coverage(data)
        result = compare(unreached(data), read_allow_list())
    print(as_sections(result.unexplained))
    for entry in result.stale:
        print(f"stale: {entry}", file=sys.stderr)
