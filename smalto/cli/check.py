"""``smalto check``: the command line of the checker.

``smalto check FILE... [--arch 9.0|10.0] [--json]`` prints one line per
violation, ``LOCATION: op: message``, then for each file what it checked:

    k.mlir: ok: 37 ops with layouts checked (of 412 ops); 85 values: 52 vectors,
    31 SMEM refs, 2 TMEM refs; arch 9.0

(on one line), with ``; 1 transfer staged through SMEM by smalto (dynamic SMEM 66560
bytes)`` at the end where ``stage_through_smem`` staged some.
With ``--json``, one JSON object per file (JSON Lines) instead. Exit status: 0
when no file has a violation, 1 when one has, 2 when one cannot be read,
parsed or used (one line on stderr); the worst of them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from smalto.basics.archs import SUPPORTED_ARCHS
from smalto.check import Violation, check
from smalto.cli.output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail

if TYPE_CHECKING:
    from jax._src.lib.mlir import ir


def check_main(argv: Sequence[str]) -> int:
    """``smalto check FILE... [--arch 9.0|10.0] [--json]``; ``argv`` is what follows ``check``."""
    from smalto.cli.arguments import command_parser, parse_arguments

    args = parse_arguments(command_parser("check"), argv)
    if isinstance(args, int):
        return args
    return run_check(args)


def run_check(args: argparse.Namespace) -> int:
    """Runs ``smalto check`` on parsed arguments (see ``smalto.cli.main``); returns its status."""
    status = EXIT_OK
    for name in args.inputs:
        status = max(status, _check_one(name, args.arch, as_json=args.json))
    return status


@dataclass(frozen=True)
class Checked:
    """What one check covered and found."""

    file: str
    arch: tuple[int, int]
    ops: int  # ops of the module
    annotated: int  # ops that carry layouts (or should), each checked
    values: dict[str, int]  # values with layouts, by kind: "vector", "SMEM ref", "TMEM ref"
    violations: list[Violation]
    staged: int = 0  # transfers smalto staged through SMEM (``stage_through_smem``)
    smem_bytes: int | None = None  # the kernel's dynamic SMEM then, where staged

    @property
    def annotated_at_all(self) -> bool:
        return not any(v.not_annotated for v in self.violations)

    def text(self) -> str:
        if not self.annotated_at_all:
            return (
                f"{self.file}: no layouts: the module has no layout attributes "
                f"({_count(self.annotated, 'op')} need them, of {self.ops}): run "
                f"`smalto infer {self.file}` first, and check what it writes; "
                f"arch {self.arch[0]}.{self.arch[1]}"
            )
        verdict = "ok" if not self.violations else _count(len(self.violations), "violation")
        kinds = ", ".join(_count(n, kind) for kind, n in self.values.items() if n)
        values = _count(sum(self.values.values()), "value") + (f": {kinds}" if kinds else "")
        staged = ""
        if self.staged:
            smem = f" (dynamic SMEM {self.smem_bytes} bytes)" if self.smem_bytes else ""
            staged = f"; {_count(self.staged, 'transfer')} staged through SMEM by smalto{smem}"
        return (
            f"{self.file}: {verdict}: {_count(self.annotated, 'op')} with layouts checked "
            f"(of {self.ops} ops); {values}; arch {self.arch[0]}.{self.arch[1]}{staged}"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "arch": f"{self.arch[0]}.{self.arch[1]}",
            "ok": not self.violations,
            "annotated": self.annotated_at_all,
            "ops": self.ops,
            "ops_with_layouts": self.annotated,
            "values": {_key(kind): n for kind, n in self.values.items()},
            "staged_through_smem": self.staged,
            "violations": [
                {"location": v.location, "op": v.op, "message": _one_line(v.message)}
                for v in self.violations
            ],
        }


def _check_one(name: str, arch: tuple[int, int] | None, *, as_json: bool) -> int:
    from smalto.basics.inputs import read_input
    from smalto.basics.mlir import MlirInputError, module_arch

    try:
        source = read_input(name)
        if arch is None:
            arch = module_arch(source.module) or (9, 0)
            if arch not in SUPPORTED_ARCHS:
                raise ValueError(
                    f"{source.name}: the module targets architecture {arch[0]}.{arch[1]}, "
                    "which smalto does not support (9.0 or 10.0); pass --arch to override"
                )
        violations = check(source.module, arch, source_name=source.name)
    except (MlirInputError, ValueError) as error:
        return fail(_one_line(str(error)), EXIT_USAGE)
    from smalto.check.smem_budget import staged_round_trips

    staged, smem_bytes = staged_round_trips(source.module)
    checked = Checked(source.name, arch, *_coverage(source.module), violations, staged, smem_bytes)
    if as_json:
        print(json.dumps(checked.as_json()))
    else:
        for violation in violations:
            if not violation.not_annotated:  # (the summary line says that one)
                print(_one_line(str(violation)))
        print(checked.text())
    return EXIT_FAILED if violations else EXIT_OK


def _coverage(module: ir.Module) -> tuple[int, int, dict[str, int]]:
    """(ops, ops that carry layouts, values with layouts by kind) of a module."""
    from smalto.basics.mlir import in_context
    from smalto.program.reader import read_program
    from smalto.program.view import Kind

    with in_context(module):
        program = read_program(module)
    kinds = {Kind.VECTOR: "vector", Kind.SMEM: "SMEM ref", Kind.TMEM: "TMEM ref"}
    values = dict.fromkeys(kinds.values(), 0)
    for value in program.values:
        if value.kind in kinds and (value.kind != Kind.SMEM or value.transformable):
            values[kinds[value.kind]] += 1
    return len(program.ops), len(program.layout_ops), values


def _key(kind: str) -> str:
    """``SMEM ref`` -> ``smem_refs``: a JSON key."""
    return kind.lower().replace(" ", "_") + "s"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _one_line(text: str) -> str:
    return " ".join(text.split())
