"""A kernel over the SMEM limit (a pipeline one stage too deep: ``deep_pipeline.py``): JAX
says only by how much; the map says what uses it, at the kernel's lines, and which verified
changes bring it under: fewer stages (the kernel lowered again with them takes exactly what
the change predicts) and a scratch scoped tighter (the changed module lowered again by JAX's
own lowering). The route's error and ``smalto infer`` say so."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import pytest
from cli_run import run

import smalto.jax
from smalto.basics.mlir import in_context
from smalto.hw.memory import SMEM_PER_BLOCK
from smalto.jax.capture import capture
from smalto.jax.smem_room import room_for_any_smem, smem_limit_of_device
from smalto.report.smem_map import JAX_PHRASE, lowered_cuts
from smalto.smem.allocations import PIPELINE, SmemMap, read_smem_map
from smalto.smem.cuts import (
    APPLICABILITY,
    FEWER_STAGES,
    REUSED,
    SCOPED_TIGHTER,
    Cut,
    _verified,
    smem_cuts,
)

KERNELS = Path(__file__).resolve().parents[1] / "smem_kernels"


def script_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


deep_pipeline = script_module(KERNELS / "deep_pipeline.py")


def _line_of(text: str) -> int:
    lines = (KERNELS / "deep_pipeline.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, start=1) if text in line)


ARGS = (
    jax.ShapeDtypeStruct((256, 512), jnp.float16),
    jax.ShapeDtypeStruct((512, 256), jnp.float16),
)


@pytest.fixture(scope="module")
def deep_text() -> str:
    with room_for_any_smem():
        (kernel,) = capture(deep_pipeline.matmul, *ARGS, by="smalto")
    return kernel.text


@pytest.fixture(scope="module")
def deep(deep_text: str) -> tuple[SmemMap, list[Cut], object]:
    from smalto.basics.mlir import parse_module

    module = parse_module(deep_text)
    with in_context(module):
        smem = read_smem_map(module)
        return smem, smem_cuts(smem, module), module


def test_the_room_is_only_inside_the_block() -> None:
    with room_for_any_smem():  # (the stand-in is in place from here on)
        pass
    assert smem_limit_of_device() == SMEM_PER_BLOCK
    with pytest.raises(ValueError, match=JAX_PHRASE):
        jax.jit(deep_pipeline.matmul).trace(*ARGS).lower(lowering_platforms=("cuda",))


def test_the_map_of_a_kernel_over_the_limit(deep: tuple[SmemMap, list[Cut], object]) -> None:
    smem, _, _ = deep
    assert (smem.total, smem.limit, smem.over) == (294944, SMEM_PER_BLOCK, 294944 - SMEM_PER_BLOCK)
    top = smem.top_users(2)
    assert [(a.kind, a.what, a.stages) for a in top] == [(PIPELINE, "4x128x128xf16", 4)] * 2
    # Pallas' own run_scoped names no kernel line: the nearest line of the kernel stands in.
    assert all(a.line and a.line.startswith("near ") and "deep_pipeline.py" in a.line for a in top)


def test_fewer_stages_predicts_the_kernel_lowered_with_fewer(
    deep: tuple[SmemMap, list[Cut], object],
) -> None:
    _, cuts, _ = deep
    stages = next(c for c in cuts if c.kind == FEWER_STAGES)
    assert stages.enough and stages.applicability == APPLICABILITY == "MaybeIncorrect"
    assert "4 -> 3" in stages.text
    setting = _line_of("max_concurrent_steps=max_concurrent_steps")
    assert stages.parameter is not None
    assert stages.parameter.startswith("max_concurrent_steps=max_concurrent_steps at ")
    assert stages.parameter.endswith(f"deep_pipeline.py:{setting}")
    # The kernel lowered again with three stages asks for exactly what the change predicts.
    (shallow,) = smalto.jax.capture(deep_pipeline.shallow, *ARGS, by="smalto")
    module = shallow.module()
    with in_context(module):
        lowered = read_smem_map(module)
    assert stages.total == lowered.total == lowered.size == 229400
    assert stages.saves == 294944 - 229400
    assert [a.stages for a in stages.changed.allocations if a.kind == PIPELINE] == [3, 3]


def test_a_scratch_scoped_tighter_is_lowered_again_by_jax(
    deep: tuple[SmemMap, list[Cut], object],
) -> None:
    smem, cuts, _ = deep
    scoped = next(c for c in cuts if c.kind == SCOPED_TIGHTER)
    # The epilogue's buffer, first used where the accumulator is stored into it.
    store = _line_of("out_smem[...] = ")
    assert scoped.subject.what == "128x128xf16"
    assert f"deep_pipeline.py:{store}:" in (scoped.subject.line or "")
    assert (scoped.saves, scoped.total, scoped.enough) == (32768, smem.total - 32768, False)
    assert not scoped.changed.overlaps()
    (verdict,) = lowered_cuts([scoped], (9, 0))
    assert verdict.lowered is True, verdict.why


def test_a_move_onto_bytes_in_use_is_refused(deep: tuple[SmemMap, list[Cut], object]) -> None:
    smem, _, module = deep
    first, second = sorted(
        (a for a in smem.allocations if a.kind == PIPELINE), key=lambda a: a.offset
    )
    with in_context(module):  # type: ignore[arg-type]
        assert _verified(smem, module, (9, 0), {second.index: first.offset}, {}) is None  # type: ignore[arg-type]


def test_the_routes_error_says_what_to_cut() -> None:
    with pytest.raises(smalto.jax.KernelLoweringError) as raised:
        smalto.jax.lower(deep_pipeline.matmul, *ARGS)
    message = str(raised.value)
    assert message.count(JAX_PHRASE) == 1
    assert message.count("changes that bring it under") == 1  # the route's gives way
    assert "pipeline buffer: 4x128x128xf16, 4 stages of 32768 near" in message
    assert "4 -> 3 pipeline stages" in message and "brings it under" in message
    assert "max_concurrent_steps=" in message
    assert "lowered again with max_concurrent_steps=3 takes 229400 bytes" in message


def test_a_users_own_jit_under_install_says_what_to_cut() -> None:
    """A user's own ``jax.jit`` with ``smalto.jax.install()``: JAX refuses the kernel's SMEM
    before any pass runs; the route's error is JAX's (same type, JAX's words first), then
    the map's top users at the kernel's lines and the cuts lowered again by JAX."""
    lowering = jax.jit(deep_pipeline.matmul).trace(*ARGS)
    smalto.jax.install()
    try:
        with pytest.raises(ValueError) as raised:
            lowering.lower(lowering_platforms=("cuda",))
    finally:
        smalto.jax.uninstall()
    assert type(raised.value) is ValueError
    first, *rest = str(raised.value).splitlines()
    assert first == f"{JAX_PHRASE}: smem_bytes=294944 > max_smem_bytes=232448"
    said = "\n".join(rest)
    users = [line for line in rest if "pipeline buffer: 4x128x128xf16, 4 stages" in line]
    assert len(users) == 2 and all("deep_pipeline.py:" in line for line in users)
    assert "4 -> 3 pipeline stages" in said and "brings it under" in said
    assert "MaybeIncorrect" in said and "JAX's lowering accepts the change" in said
    assert said.index("pipeline buffer:") < said.index("changes that bring it under")
    # Without the route, JAX's own words alone.
    with pytest.raises(ValueError) as bare:
        jax.jit(deep_pipeline.matmul).trace(*ARGS).lower(lowering_platforms=("cuda",))
    assert str(bare.value) == first


def test_smalto_infer_warns_with_the_map(deep_text: str, tmp_path: Path) -> None:
    path = tmp_path / "deep.mlir"
    path.write_text(deep_text)
    ran = run("infer", path)
    assert ran.status == 0, ran.err
    assert f"warning: {path}: {JAX_PHRASE}: smem_bytes=294944 > max_smem_bytes=232448" in ran.err
    assert "fewer pipeline stages" in ran.err and "JAX's lowering accepts the change" in ran.err
    assert "mosaic_gpu.slice_smem" in ran.out  # the module is still inferred and printed


def test_staging_over_the_limit_names_what_takes_the_smem(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel whose staging would go past the limit (a big table in SMEM beside a
    tcgen05 product, the product's operands not ended: their bytes would serve): the note
    of the refusal names what takes the SMEM already."""
    import functools

    from staging_kit import without_proven_ends

    without_proven_ends(monkeypatch)

    from rule_kit import parse
    from user_kernels_staging import tcgen05_narrow_out_beside_a_big_table
    from user_kernels_unoptimized import BLACKWELL, sds

    fn = functools.partial(tcgen05_narrow_out_beside_a_big_table, out_dtype=jnp.bfloat16)
    bf16 = jnp.bfloat16
    args = (sds((128, 64), bf16), sds((64, 128), bf16), sds((2, 180, 256), bf16))
    (captured,) = smalto.jax.capture(fn, *args, by="smalto")
    module = parse(captured.text)
    with pytest.raises(smalto.InferenceError) as error:
        smalto.infer_layout(module, arch=BLACKWELL, stage_through_smem=True)
    (note,) = error.value.notes
    assert "over the 232448 a block may have; the kernel's SMEM (" in note
    table = next(line for line in note.splitlines() if "2x180x256xbf16" in line)
    assert table.split()[:4] == ["184320", "bytes", "scratch:", "2x180x256xbf16"]
    assert "user_kernels_staging.py:" in table


def test_two_buffers_never_in_use_at_once_share_one() -> None:
    """Two whole-kernel scratch buffers of one shape, one for each phase (``two_phases.py``):
    one buffer serves both; JAX's lowering accepts the changed module."""
    two_phases = script_module(KERNELS / "two_phases.py")
    x = jax.ShapeDtypeStruct((256, 128), jnp.float32)
    with room_for_any_smem():
        (kernel,) = capture(two_phases.two_phases, x, by="smalto")
    module = kernel.module()
    with in_context(module):
        smem = read_smem_map(module)
        cuts = smem_cuts(smem, module)
    assert smem.total == 2 * 131072 > SMEM_PER_BLOCK
    first, second = sorted(smem.allocations, key=lambda a: a.offset)
    assert first.overlaps_in_time(second)  # both allocated for the whole kernel...
    assert not first.used_with(second)  # ...never both in use
    (reused,) = cuts
    assert reused.kind == REUSED and reused.enough
    assert (reused.saves, reused.total) == (131072, 131072)
    assert not reused.changed.overlaps(in_use=True)
    (verdict,) = lowered_cuts(cuts, (9, 0))
    assert verdict.lowered is True, verdict.why
