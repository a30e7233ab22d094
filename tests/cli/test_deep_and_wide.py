"""Deep and wide modules through the commands (the fuzz family of ``fuzz/deep_wide``):
every command answers, or says in one line why not (exit status 2, naming the depth,
where the module nests deeper than smalto takes), never with a traceback; and every
answer passes the checker.

CI runs a small derandomized sample (a module 512 regions deep costs seconds): one module
a depth; ``make fuzz`` sets ``SMALTO_FUZZ_EXAMPLES`` for more and ``SMALTO_FUZZ_SEED`` for
fresh ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import reference
from cli_run import run
from fuzz.deep_wide import EDGE_DEPTHS, ShapedModule, deep_modules, wide_modules
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import smalto
from smalto.basics.mlir import MlirInputError
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


# Depths a few, and at and about the limit, and far past it (MLIR's parser would overflow
# its stack at about 3 000): each one module in CI, ``SMALTO_FUZZ_EXAMPLES`` each else.
DEPTHS = (1, 2, 5, 40, *EDGE_DEPTHS)


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_modules(depth: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    @_seeded
    @SETTINGS
    @given(deep_modules(st.just(depth)))
    def judged(module: ShapedModule) -> None:
        # Every command on the shallow ones and at the limit (where a walk that
        # recursed would be deepest); infer and check elsewhere.
        commands = depth <= 40 or depth == MAX_REGION_DEPTH
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


def test_bracket_depth_ignores_strings_and_comments() -> None:
    """What the text check counts: brackets, not those in strings or comments, and
    unclosed ones too (MLIR's parser recurses into them before it finds the end)."""
    assert bracket_depth('"a" ({ [x] })') == 3
    assert bracket_depth('"}}}}" ({ })') == 2
    assert bracket_depth('"\\"}}" ({ })') == 2  # an escaped quote: the string goes on
    assert bracket_depth("// }}}}\n({ })") == 2
    assert bracket_depth("(" * 5000) == 5000
    assert bracket_depth("") == 0


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
