"""``smalto.jax`` under threads: each call and each thread keeps its own route.

``lower``, ``capture`` and ``enabled()`` choose the pass, its options, the target
architecture and who watches the calls for the thread that asks, and leave nothing
behind: two threads lowering for two GPUs at once each get their own GPU's kernels,
a thread outside any block gets JAX's own pass, and JAX's functions are again the
very objects they were once every call is over (issue #43).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
from beyond_kernels import gelu_exact
from jax._src.lib.mlir import ir
from jax.experimental.mosaic import gpu as mgpu
from jax.experimental.mosaic.gpu import core as mgpu_core
from jax.experimental.mosaic.gpu import layout_inference
from jax.experimental.mosaic.gpu import utils as mgpu_utils
from jax.experimental.pallas import mosaic_gpu as plgpu
from pallas_kernels import BLACKWELL, HOPPER, WARPGROUP, add_one, f32
from user_kernels_keepdims import rms_norm

import smalto
import smalto.jax
from smalto.basics.mlir import make_context
from smalto.jax import KernelLoweringError

# JAX's own functions, as this module found them (nothing of smalto's patched yet).
_JAX_OWN = {
    (mgpu, "infer_layout"): mgpu.infer_layout,
    (layout_inference, "infer_layout"): layout_inference.infer_layout,
    (mgpu_utils, "_infer_arch"): mgpu_utils._infer_arch,
    (mgpu_core, "_lower_as_gpu_kernel"): mgpu_core._lower_as_gpu_kernel,
}
ROUNDS = 8


def _assert_jax_unpatched() -> None:
    for (module, name), original in _JAX_OWN.items():
        assert getattr(module, name) is original, f"{module.__name__}.{name} is still patched"
    assert not smalto.jax.is_installed()


def _named_add_one(name: str) -> Callable[[jax.Array], jax.Array]:
    """``x + 1`` as a kernel whose module is called ``name`` (Pallas names it after its body)."""

    def body(x_gmem, out_gmem):
        out_gmem[...] = x_gmem[...] + 1.0

    body.__name__ = body.__qualname__ = name

    def kernel(x: jax.Array) -> jax.Array:
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return plgpu.kernel(body, out_type=out, compiler_params=WARPGROUP)(x)

    return kernel


def _custom_call_archs(lowering: smalto.jax.Lowering) -> list[tuple[int, int]]:
    """The arch each Mosaic GPU kernel in the lowered StableHLO module was built for,
    read from the serialized kernel module itself (not from what ``lower`` says)."""
    serialized: list[bytes] = []

    def walk(operation: ir.Operation) -> None:
        for region in operation.regions:
            for block in region:
                for op in block:
                    if (
                        op.name == "stablehlo.custom_call"
                        and "mhlo.backend_config" in op.attributes
                    ):
                        config = ir.DictAttr(op.attributes["mhlo.backend_config"])
                        if "module" in config:
                            serialized.append(ir.StringAttr(config["module"]).value_bytes)
                    walk(op.operation)

    walk(lowering.lowered.compiler_ir("stablehlo").operation)
    archs = []
    with make_context() as context:
        context.allow_unregistered_dialects = True
        for data in serialized:
            attributes = ir.Module.parse(data).operation.attributes
            archs.append(
                (
                    ir.IntegerAttr(attributes["mosaic_gpu.arch_major"]).value,
                    ir.IntegerAttr(attributes["mosaic_gpu.arch_minor"]).value,
                )
            )
    return archs


def _in_threads(*work: Callable[[], Any]) -> list[Any]:
    """Runs each of ``work`` in its own thread, all at once; their results, in order
    (re-raising the first error a thread raised)."""
    results: list[Any] = [None] * len(work)
    errors: list[BaseException] = []
    start = threading.Barrier(len(work))

    def run(index: int, job: Callable[[], Any]) -> None:
        try:
            start.wait()
            results[index] = job()
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=item) for item in enumerate(work)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def test_two_threads_lower_for_their_own_arch_with_their_own_kernels() -> None:
    """One thread lowers for Hopper, one for Blackwell, at once and many times: the
    same function (which JAX caches) and one of each thread's own. Every result is
    built for the arch its thread asked for and holds only that thread's kernels."""
    own = {HOPPER: _named_add_one("hopper_body"), BLACKWELL: _named_add_one("blackwell_body")}

    def lowerings(arch: tuple[int, int]) -> list[tuple[str, smalto.jax.Lowering]]:
        made = []
        for _ in range(ROUNDS):
            for name, fn in (("shared", add_one), ("own", own[arch])):
                made.append((name, smalto.jax.lower(fn, f32(128, 128), arch=arch)))
        return made

    by_arch = dict(
        zip((HOPPER, BLACKWELL), _in_threads(*(lambda a=a: lowerings(a) for a in own)), strict=True)
    )
    for arch, made in by_arch.items():
        expected_name = {
            "shared": "body",
            "own": f"{'hopper' if arch == HOPPER else 'blackwell'}_body",
        }
        for which, lowering in made:
            assert lowering.arch == arch
            assert _custom_call_archs(lowering) == [arch], (which, arch)
            assert [(k.name, k.arch) for k in lowering.kernels] == [(expected_name[which], arch)]
            (kernel,) = lowering.kernels
            assert f"mosaic_gpu.arch_major = {arch[0]} : i32" in kernel.text
    _assert_jax_unpatched()


def test_two_threads_capture_with_their_own_arch() -> None:
    def captures(arch: tuple[int, int]) -> list[smalto.jax.CapturedModule]:
        return [
            m
            for _ in range(ROUNDS)
            for m in smalto.jax.capture(add_one, f32(128, 128), arch=arch, by="smalto")
        ]

    hopper, blackwell = _in_threads(lambda: captures(HOPPER), lambda: captures(BLACKWELL))
    for arch, captured in ((HOPPER, hopper), (BLACKWELL, blackwell)):
        assert len(captured) == ROUNDS
        assert {(m.arch, m.inferred_by) for m in captured} == {(arch, "smalto")}
        assert all(f"mosaic_gpu.arch_major = {arch[0]} : i32" in m.text for m in captured)
    _assert_jax_unpatched()


def test_two_threads_lower_with_their_own_options() -> None:
    """``rewrite=False`` in one thread does not reach the other thread's calls: the RMS
    norm written with keepdims=True lowers only through the unit-dim rewrite."""
    x, w = f32(64, 128), f32(128)

    def lowers(**options: object) -> list[bool]:
        outcomes = []
        for _ in range(ROUNDS // 2):
            try:
                smalto.jax.lower(rms_norm, x, w, arch=HOPPER, **options)
                outcomes.append(True)
            except KernelLoweringError:
                outcomes.append(False)
        return outcomes

    # (The rewrite's warning: the filters are the process's, set here for both threads.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
        rewriting, not_rewriting = _in_threads(lambda: lowers(), lambda: lowers(rewrite=False))
    assert all(rewriting) and not any(not_rewriting)
    _assert_jax_unpatched()


def _lowers_by_jax(fn: Callable[..., Any], *args: Any) -> bool:
    """Whether a plain JAX lowering for CUDA (no smalto call) of ``fn`` succeeds."""
    try:
        jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
    except Exception:  # noqa: BLE001 - JAX's pass refusing, whatever it raises
        return False
    return True


def test_enabled_in_two_threads_is_per_thread() -> None:
    """Two threads in ``enabled()`` blocks that overlap (the first leaves before the
    second): each is routed through smalto inside its block only, the main thread,
    outside any block, gets JAX's own pass all along (row softmax: JAX's pass finds no
    layouts, smalto does), and nothing stays installed after."""
    x = f32(128, 128)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    main_checked = threading.Event()
    seen: dict[str, object] = {}

    def first() -> None:
        with smalto.jax.enabled():
            seen["first installed"] = smalto.jax.is_installed()
            seen["first lowers"] = _lowers_by_jax(gelu_exact, x)
            first_in.set()
            second_in.wait(60)
            main_checked.wait(60)
        seen["first after"] = smalto.jax.is_installed()
        first_out.set()

    def second() -> None:
        first_in.wait(60)
        with smalto.jax.enabled():
            second_in.set()
            first_out.wait(60)
            seen["second inside"] = smalto.jax.is_installed()
            seen["second lowers"] = _lowers_by_jax(gelu_exact, x)
        seen["second after"] = smalto.jax.is_installed()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    second_in.wait(60)
    # Both blocks open, in other threads: this thread still has JAX's pass, uncached.
    seen["main installed"] = smalto.jax.is_installed()
    seen["main lowers"] = _lowers_by_jax(gelu_exact, x)
    main_checked.set()
    for thread in threads:
        thread.join()
    assert seen == {
        "first installed": True,
        "first lowers": True,
        "second inside": True,
        "second lowers": True,
        "first after": False,
        "second after": False,
        "main installed": False,
        "main lowers": False,
    }
    assert not _lowers_by_jax(gelu_exact, x)  # JAX's pass again, no lowering of smalto's cached
    _assert_jax_unpatched()


def test_a_thread_outside_any_block_gets_jax_pass_while_another_is_inside() -> None:
    x = f32(128, 128)
    inside, done = threading.Event(), threading.Event()
    routed: list[str] = []

    def in_block() -> None:
        with smalto.jax.enabled():
            routed.extend(k.inferred_by for k in smalto.jax.capture(add_one, x))
            inside.set()
            done.wait(60)

    thread = threading.Thread(target=in_block)
    thread.start()
    inside.wait(60)
    try:
        outside = [k.inferred_by for _ in range(3) for k in smalto.jax.capture(add_one, x)]
    finally:
        done.set()
        thread.join()
    assert routed == ["smalto"] and outside == ["jax"] * 3
    _assert_jax_unpatched()


def test_a_forced_arch_is_not_left_patched_into_jax() -> None:
    """Overlapping forced archs (one thread's ``lower`` leaving while the other's runs)
    leave ``utils._infer_arch`` JAX's own, and ``uninstall`` has nothing to undo."""
    _in_threads(
        *(
            lambda a=arch: smalto.jax.lower(add_one, f32(128, 128), arch=a)
            for arch in (HOPPER, BLACKWELL) * 2
        )
    )
    assert mgpu_utils._infer_arch is _JAX_OWN[(mgpu_utils, "_infer_arch")]
    assert mgpu_utils._infer_arch() == jax_own_arch()
    _assert_jax_unpatched()


def jax_own_arch() -> tuple[int, int]:
    """What JAX's own ``_infer_arch`` answers on this machine."""
    return tuple(_JAX_OWN[(mgpu_utils, "_infer_arch")]())  # type: ignore[operator,return-value]


def test_install_in_one_thread_reaches_every_thread() -> None:
    """``install()`` is process-wide, as documented: a thread started after it, in no
    block, gets smalto's pass; after ``uninstall()`` JAX's own, exactly."""
    x = f32(128, 128)
    smalto.jax.install()
    try:
        (by_installed,) = _in_threads(
            lambda: [k.inferred_by for k in smalto.jax.capture(add_one, x)]
        )
    finally:
        smalto.jax.uninstall()
    (by_default,) = _in_threads(lambda: [k.inferred_by for k in smalto.jax.capture(add_one, x)])
    assert (by_installed, by_default) == (["smalto"], ["jax"])
    _assert_jax_unpatched()


def test_two_threads_fix_for_their_own_arch() -> None:
    """``fix`` in two threads at once, a Hopper kernel and a Blackwell one: each gets the
    edits it gets alone (an arch or a kernel of the other thread would change them)."""
    import runpy

    from pallas_kernels import f16

    kernels = Path(__file__).resolve().parents[1] / "fix_kernels"
    hopper = runpy.run_path(str(kernels / "hopper_row_sum.py"))["row_sums"]
    blackwell = runpy.run_path(str(kernels / "blackwell_load_as_wgmma.py"))["matmul"]
    jobs = {
        HOPPER: lambda: smalto.jax.fix(hopper, f32(128, 128), arch=HOPPER),
        BLACKWELL: lambda: smalto.jax.fix(blackwell, f16(128, 64), f16(64, 128), arch=BLACKWELL),
    }
    alone = {arch: job() for arch, job in jobs.items()}
    assert alone[HOPPER] and alone[BLACKWELL] and alone[HOPPER] != alone[BLACKWELL]
    for _ in range(3):
        together = _in_threads(*jobs.values())
        assert dict(zip(jobs, together, strict=True)) == alone
    _assert_jax_unpatched()


def test_each_thread_dumps_its_own_modules(tmp_path: Path) -> None:
    """``enabled(dump_to=...)`` in two threads: each folder holds its own thread's kernel."""
    names = ("first_body", "second_body")

    def dumping(name: str) -> None:
        with smalto.jax.enabled(dump_to=tmp_path / name):
            for _ in range(3):
                jax.jit(_named_add_one(name)).trace(f32(128, 128)).lower(
                    lowering_platforms=("cuda",)
                )

    _in_threads(*(lambda n=n: dumping(n) for n in names))
    for name in names:
        dumped = sorted(p.name for p in (tmp_path / name).iterdir())
        assert dumped and all(f"-{name}." in file for file in dumped), dumped
    _assert_jax_unpatched()
