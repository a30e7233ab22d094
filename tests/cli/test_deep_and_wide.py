"""Deep and wide modules through the commands (the fuzz family of ``fuzz/deep_wide``):
every command answers, or says in one line why not (exit status 2, naming the depth,
where the module nests deeper than smalto takes), never with a traceback; and every
answer passes the checker.

CI runs a small derandomized sample (a module 1 024 regions deep costs seconds): one
module a depth, every command (infer, check, --report, explain, --summary, smem, draw) on
the shallow ones and at the limit;
``make fuzz`` sets ``SMALTO_FUZZ_EXAMPLES`` for more (and every command on random depths
up to the limit) and ``SMALTO_FUZZ_SEED`` for fresh ones.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import reference
from cli_run import run
from fuzz.deep_wide import EDGE_DEPTHS, ShapedModule, deep_modules, wide_modules
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import smalto
from smalto.basics.mlir import MlirInputError, parse_module
from smalto.basics.nesting import MAX_REGION_DEPTH, bracket_depth
from smalto.check import check

EXAMPLES = int(os.environ.get("SMALTO_FUZZ_EXAMPLES", "0"))
# A fresh seed (``make fuzz``), or the same modules in every run (CI).
FRESH_SEED = os.environ.get("SMALTO_FUZZ_SEED")
SETTINGS = settings(
    max_examples=max(1, EXAMPLES),
    deadline=None,
    derandomize=FRESH_SEED is None,
    database=None,
    suppress_health_check=list(HealthCheck),
    # A failing module is reported as found: shrinking it, or the explain phase (which
    # traces every line), would re-run commands that take seconds on these modules many
    # times over.
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)


def _seeded(test: Callable[..., None]) -> Callable[..., None]:
    return test if FRESH_SEED is None else seed(int(FRESH_SEED))(test)


def _arch(module: ShapedModule) -> str:
    return f"{module.arch[0]}.{module.arch[1]}"


def _one_line(err: str) -> None:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert all(line.startswith("smalto") for line in lines), err


def _judge(module: ShapedModule, folder: Path, commands: bool) -> None:
    path = folder / "kernel.mlir"
    path.write_text(module.text)
    ran = run("infer", path, "--arch", _arch(module))
    _one_line(ran.err)
    if module.depth > MAX_REGION_DEPTH:
        assert ran.status == 2, ran.err
        assert f"at most {MAX_REGION_DEPTH} regions deep" in ran.err
        assert " deep" in ran.err.split(":")[-2] or "nests" in ran.err
        return
    assert ran.status in (0, 1), ran.err
    if ran.status == 0:
        inferred = folder / "inferred.mlir"
        inferred.write_text(ran.out)
        checked = run("check", inferred, "--arch", _arch(module))
        _one_line(checked.err)
        assert checked.status == 0, checked.out + checked.err
    if not commands:
        return
    report = run("infer", path, "--arch", _arch(module), "--report", folder / "page.html")
    _one_line(report.err)
    assert report.status == ran.status, report.err
    assert (folder / "page.html").stat().st_size > 0
    explained = run("explain", path, "--arch", _arch(module))
    _one_line(explained.err)
    assert explained.status == ran.status, explained.err
    summary = run("infer", path, "--arch", _arch(module), "--summary")
    _one_line(summary.err)
    assert summary.status == ran.status, summary.err
    smem = run("smem", path, "--arch", _arch(module))
    _one_line(smem.err)
    assert smem.status in (0, 1), smem.err
    assert "SMEM" in smem.out, smem.out
    if ran.status == 0:
        # The value deepest in the printed module (the summary's last row), drawn.
        deepest = summary.out.rstrip().splitlines()[-1].split()[1]
        drawn = run("draw", path, deepest, "--arch", _arch(module), "-o", folder / "value.svg")
        _one_line(drawn.err)
        assert drawn.status == 0, drawn.err
        assert (folder / "value.svg").read_text().lstrip().startswith("<")


# Depths a few, and at and about the limit, and far past it (MLIR's parser would overflow
# its stack at about 3 000): each one module in CI, ``SMALTO_FUZZ_EXAMPLES`` each else.
DEPTHS = (1, 2, 5, 40, *EDGE_DEPTHS)


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_modules(depth: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    @_seeded
    @SETTINGS
    @given(deep_modules(st.just(depth)))
    def judged(module: ShapedModule) -> None:
        # Every command on the shallow ones and at the limit (``make fuzz`` runs them on
        # random depths up to it).
        commands = depth <= MAX_REGION_DEPTH
        _judge(module, tmp_path_factory.mktemp("deep"), commands)

    judged()


@pytest.mark.parametrize("length", (300, 2_000))
def test_wide_modules(length: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    @_seeded
    @SETTINGS
    @given(wide_modules(st.just(length)))
    def judged(module: ShapedModule) -> None:
        _judge(module, tmp_path_factory.mktemp("wide"), commands=length <= 300)

    judged()


def test_random_depths_through_every_command(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``make fuzz`` only (``SMALTO_FUZZ_EXAMPLES``): random depths up to the limit, every
    command (a walk that recursed would run past Python's limit at a few hundred)."""
    if EXAMPLES == 0:
        pytest.skip("every command on modules hundreds deep takes minutes: make fuzz")

    @_seeded
    @SETTINGS
    @given(deep_modules(st.integers(41, MAX_REGION_DEPTH)))
    def judged(module: ShapedModule) -> None:
        _judge(module, tmp_path_factory.mktemp("deep"), commands=True)

    judged()


# What a thread gets where the stack's limit is unlimited (glibc's default): MLIR's parser
# takes about 500 regions on it, the printer about 2 300.
_SMALL_THREAD_STACK = 2 << 20


def test_the_library_takes_the_limit_from_a_thread_with_a_small_stack() -> None:
    """``parse_module``, ``infer_layout``, the checker and printing, from a thread with a 2 MiB
    stack, on a module as deep as smalto takes (the parse runs on a stack of its own); one
    level deeper, ``infer_layout`` refuses it in one line."""

    @SETTINGS
    @given(deep_modules(st.just(MAX_REGION_DEPTH)), deep_modules(st.just(MAX_REGION_DEPTH + 1)))
    def judged(module: ShapedModule, deeper: ShapedModule) -> None:
        outcome: list[object] = []

        def work() -> None:
            parsed = parse_module(module.text)
            try:
                smalto.infer_layout(parsed, arch=module.arch)
                outcome.append((check(parsed, module.arch), len(str(parsed))))
            except smalto.InferenceError as failed:  # no layouts: said, not crashed
                outcome.append(failed)
            too_deep = parse_module(deeper.text)
            try:
                smalto.infer_layout(too_deep, arch=deeper.arch)
            except MlirInputError as refused:
                outcome.append(str(refused))

        before = threading.stack_size(_SMALL_THREAD_STACK)
        try:
            worker = threading.Thread(target=work)
            worker.start()
        finally:
            threading.stack_size(before)
        worker.join()
        assert len(outcome) == 2, outcome
        answer, refusal = outcome
        if isinstance(answer, tuple):
            problems, printed = answer
            assert problems == [] and printed > 0, problems
        assert isinstance(refusal, str), refusal
        assert refusal.startswith(f"the module nests regions {MAX_REGION_DEPTH + 1} deep")
        assert "\n" not in refusal

    judged()


def test_bracket_depth_ignores_strings_and_comments() -> None:
    """What the text check counts: brackets, not those in strings or comments, and
    unclosed ones too (MLIR's parser recurses into them before it finds the end)."""
    assert bracket_depth('"a" ({ [x] })') == 3
    assert bracket_depth('"}}}}" ({ })') == 2
    assert bracket_depth('"\\"}}" ({ })') == 2  # an escaped quote: the string goes on
    assert bracket_depth("// }}}}\n({ })") == 2
    assert bracket_depth("(" * 5000) == 5000
    assert bracket_depth("") == 0


def test_bracket_depth_counts_angle_brackets_not_arrows_or_comparisons() -> None:
    """Types and attributes nest in ``<...>``, which MLIR's parser recurses into as into
    regions; the ``>`` of an arrow and the ``>=`` of an integer set close nothing."""
    assert bracket_depth("tuple<tuple<vector<4xf32>>>") == 3
    assert bracket_depth("memref<4xf32, #gpu.address_space<workgroup>>") == 2
    assert bracket_depth("affine_map<(d0, d1) -> (d1 floordiv 8, d0)>") == 2
    assert bracket_depth("affine_set<(d0) : (d0 - 10 >= 0, 4 - d0 >= 0)>") == 2
    assert bracket_depth("(vector<4xf32>) -> vector<4xf32>") == 2
    assert bracket_depth('"tuple<tuple<" // <<<<\n<{a = 1}>') == 2
    assert bracket_depth("tuple<" * 30_000) == 30_000


def _nested_type_module(depth: int) -> str:
    """A kernel whose argument's type nests ``depth`` tuples around a vector (in the
    brackets of the signature: ``depth`` + 2 deep)."""
    nested = "tuple<" * depth + "vector<128xf32>" + ">" * depth
    return f"func.func @kernel(%arg0: {nested}) {{\n  func.return\n}}\n"


@pytest.mark.parametrize("command", ("infer", "check", "explain"))
def test_types_nested_past_the_limit_are_refused_in_one_line(command: str, tmp_path: Path) -> None:
    """Types nested 30 000 deep (MLIR's parser overflows an 8 MiB stack at about 26 000,
    a 2 MiB one at 6 000-12 000) are refused before they are parsed, in one line."""
    path = tmp_path / "kernel.mlir"
    path.write_text(_nested_type_module(30_000))
    ran = run(command, path, "--arch", "9.0")
    _one_line(ran.err)
    assert ran.status == 2, ran.err
    assert "nests brackets 30002 deep" in ran.err, ran.err
    assert f"at most {MAX_REGION_DEPTH} regions deep" in ran.err


def test_types_nested_within_the_limit_are_read() -> None:
    """Nested types under the bound parse (on a thread with room for them): the text check
    refuses only what the parser could not take."""
    parsed = parse_module(_nested_type_module(1_500))
    assert str(parsed).count("tuple<") == 1_500


def test_the_library_refuses_a_parsed_module_deeper_than_the_limit() -> None:
    """A module parsed by the caller (MLIR's parser takes 600 regions) reaches the pass and
    the checker: each refuses it in one line naming the depth, and leaves it as it came."""

    @SETTINGS
    @given(deep_modules(st.just(MAX_REGION_DEPTH + 88)))
    def judged(module: ShapedModule) -> None:
        parsed = reference.parse(module.text, reference.shared_context())
        before = str(parsed)
        for run_it in (
            lambda: smalto.infer_layout(parsed, arch=module.arch),
            lambda: check(parsed, module.arch),
        ):
            with pytest.raises(MlirInputError) as refused:
                run_it()
            assert str(refused.value).startswith(
                f"the module nests regions {MAX_REGION_DEPTH + 88} deep"
            )
            assert "\n" not in str(refused.value)
        assert str(parsed) == before

    judged()
