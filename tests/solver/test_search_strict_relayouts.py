"""Strict relayouts from values that cannot be splats, before the search (JAX 0.12).

Between a producer and its user only a splat may change layout, so a strict
relayout from a value known not to be a splat (a load, or anything such a value
flows into) holds only as the identity. JAX 0.12's pass turns these relayouts
into equalities before searching; smalto joins their variables into one slot, so
that the search takes no decision (and spends no fuel) on a value that is forced,
and both searches go the same way.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re

from rule_kit import (
    WGMMA,
    gmem,
    in_layouts,
    infer_like_jax,
    kernel,
    layout_cast,
    op,
    parse,
    run_jax,
    vec,
    vector_load,
    vector_store,
)

from smalto.constraints.language import Role, System
from smalto.infer import in_context
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.rules import derive_system
from smalto.solve.decision import Solved
from smalto.solve.options import SolveOptions
from smalto.solve.search import under_jax_rules

SHAPE = (128, 128)
F32 = vec(SHAPE, "f32")
HOPPER = (9, 0)


def chain_kernel() -> str:
    """load -> negf -> exp -> addf (with a splat constant) -> cast to WGMMA -> store."""
    return kernel(
        [
            vector_load("x", "arg0", gmem(SHAPE, "f32"), F32),
            f"%n = arith.negf %x : {F32}",
            f"%e = math.exp %n : {F32}",
            f"%c = arith.constant dense<1.0> : {F32}",
            f"%a = arith.addf %e, %c : {F32}",
            layout_cast("w", "a", F32, WGMMA),
            vector_store("w", F32, "arg1", gmem(SHAPE, "f32")),
        ],
        [gmem(SHAPE, "f32"), gmem(SHAPE, "f32")],
    )


def _solve(text: str) -> tuple[Solved, Program, System]:
    """What solved ``text`` (JAX's order, then the complete search over JAX's rules), with
    what it solved."""
    module = parse(text)
    with in_context(module):
        program = read_program(module)
        system = derive_system(program, HOPPER)
        solved = under_jax_rules(system, program, SolveOptions(fuel=100_000, arch=HOPPER))
        assert isinstance(solved, Solved)
    return solved, program, system


def _jax_fuel(text: str) -> int:
    """The fuel JAX's pass reports spending (its debug log line)."""
    logger = logging.getLogger("jax.experimental.mosaic.gpu.layout_inference")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            run_jax(text)
    finally:
        logger.setLevel(level)
    found = re.search(r"consumed (\d+)/\d+ fuel", out.getvalue())
    assert found, out.getvalue()
    return int(found.group(1))


def test_values_flowing_from_a_load_share_one_slot():
    """The load, negf, exp and addf results are one slot; the splat constant is not in it."""
    solver, program, system = _solve(chain_kernel())
    slot_of = {
        program.ops[site.op].name: solver.state.root[var]
        for site, var in system.var_of_site.items()
        if site.role is Role.RESULT
    }
    chain = {slot_of[n] for n in ("mosaic_gpu.vector_load", "arith.negf", "math.exp", "arith.addf")}
    assert len(chain) == 1
    assert slot_of["arith.constant"] not in chain


def test_forced_values_cost_no_fuel_as_in_jax():
    """One decision (the load's layout, from the cast) in both passes: the rest is forced."""
    text = chain_kernel()
    module = infer_like_jax(text)
    assert in_layouts(op(module, "arith.addf")) == [WGMMA, WGMMA]
    solver, _, _ = _solve(text)
    assert solver.state.fuel.spent == _jax_fuel(text) == 1
