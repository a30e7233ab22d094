"""Shrinks a failing fuzz module to a few lines with the same verdict.

    python -m fuzz.minimize tests/fuzz/regressions/<file>.mlir      (from ``tests/``)

``make fuzz`` keeps the smallest module it generated for each failure, which
is seldom small. This deletes the function body's lines one at a time (whole
``scf`` ops with their regions) and keeps each deletion after which the module
still parses and gets the same verdict kind and detail signature; repeated
until nothing more goes. Prints the result with the regression header.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


def _ops(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of each op directly in the body, a region-holding op whole."""
    spans, i = [], 0
    while i < len(lines):
        depth, j = 0, i
        while True:
            depth += lines[j].count("({") - lines[j].count("})")
            if depth <= 0:
                break
            j += 1
        spans.append((i, j))
        i = j + 1
    return spans


def minimize(text: str, arch: tuple[int, int], *, fuel: int | None = None) -> str:
    from fuzz import property as prop

    fuel = fuel or prop.smalto.DEFAULT_FUEL
    target = prop.judge(text, arch, fuel=fuel).signature
    lines = text.splitlines()
    header = [line for line in lines if line.startswith("//")]
    head, *body, tail_return, tail_close = [
        line for line in lines if line.strip() and not line.startswith("//")
    ]

    def build(lines: list[str]) -> str:
        return "\n".join([head, *lines, tail_return, tail_close]) + "\n"

    def same(lines: list[str]) -> bool:
        try:
            return prop.judge(build(lines), arch, fuel=fuel).signature == target
        except Exception:  # noqa: BLE001 -- does not parse: not the same failure
            return False

    changed = True
    while changed:
        changed = False
        # One op at a time, then an op with every op that uses its results
        # (a ref and the wgmma reading it go together).
        for closure in (False, True):
            spans = _ops(body)
            for index in reversed(range(len(spans))):
                if index >= len(spans):
                    continue
                doomed = _with_users(body, spans, index) if closure else {index}
                candidate = [
                    line
                    for i, (first, last) in enumerate(spans) if i not in doomed
                    for line in body[first : last + 1]
                ]  # fmt: skip
                # Also without what the deletion left unused (the refs of a
                # deleted wgmma), which alone may fail differently.
                for attempt in (_without_orphans(candidate, body), candidate):
                    if attempt != body and same(attempt):
                        body, changed = attempt, True
                        spans = _ops(body)
                        break
    return "\n".join(header) + ("\n" if header else "") + build(body)


def _with_users(body: list[str], spans: list[tuple[int, int]], index: int) -> set[int]:
    """The op at ``index`` and every later op that uses its results, transitively."""
    doomed, names = {index}, set(_defined(body[spans[index][0]]))
    for i in range(index + 1, len(spans)):
        text = " ".join(body[spans[i][0] : spans[i][1] + 1])
        if any(re.search(rf"{re.escape(name)}\b", text) for name in names):
            doomed.add(i)
            names.update(_defined(body[spans[i][0]]))
    return doomed


def _without_orphans(body: list[str], before: list[str]) -> list[str]:
    """``body`` less the ops whose results were used in ``before`` and no longer are."""
    used_before = "\n".join(before)
    while True:
        spans = _ops(body)
        text = "\n".join(body)
        orphans = {
            i for i, (first, _) in enumerate(spans)
            for name in _defined(body[first])
            if _uses(name, text) == 0 and _uses(name, used_before) > 0
        }  # fmt: skip
        if not orphans:
            return body
        body = [
            line
            for i, (first, last) in enumerate(spans) if i not in orphans
            for line in body[first : last + 1]
        ]  # fmt: skip


def _uses(name: str, text: str) -> int:
    """How often ``name`` occurs in ``text`` other than where it is defined."""
    return len(re.findall(rf"{re.escape(name)}\b", text)) - len(
        re.findall(rf"^\s*{re.escape(name)}(?::\d+)?\s*=", text, re.MULTILINE)
    )


def _defined(line: str) -> list[str]:
    match = re.match(r"\s*(%[\w]+)(?::\d+)?\s*=", line)
    return [match[1]] if match else []


def main(argv: list[str] | None = None) -> int:
    from fuzz import property as prop

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--write", action="store_true", help="overwrite the file")
    args = parser.parse_args(argv)
    text, arch = prop.read_regression(args.path)
    small = minimize(text, arch)
    if args.write:
        args.path.write_text(small)
    print(small, end="")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "helpers"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main())
