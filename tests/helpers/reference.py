"""Differential-testing helpers: run JAX's layout inference and smalto's on
corpus modules and compare the layout attributes they write.

Used by the tests and by the benchmarks. JAX's results are cached per file
under ``.cache/reference/`` (keyed by the file's sha256, the JAX version and
the arch), so only the first run pays for JAX's pass.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_ROOT = Path(__file__).resolve().parents[1] / "corpus"
CACHE_DIR = REPO_ROOT / ".cache" / "reference"

LAYOUT_ATTRIBUTE_NAMES = (
    "in_layouts",
    "out_layouts",
    "in_transforms",
    "out_transforms",
    "in_tmem_layouts",
    "out_tmem_layouts",
)

Arch = tuple[int, int]
# One entry per annotated op: (f"{pre-order index}:{op name}", {name: str(attr)}).
Attributes = list[tuple[str, dict[str, str]]]


@dataclasses.dataclass(frozen=True)
class CorpusEntry:
    """One corpus module: ``key`` is its path relative to the corpus root,
    without ``.mlir``."""

    key: str
    path: Path
    arch: Arch
    jax_ok: bool

    @property
    def folder(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def blackwell(self) -> bool:
        return self.arch[0] >= 10


def corpus_root() -> Path | None:
    """The shared corpus, if present: ``$SMALTO_CORPUS_ROOT``, else ``../shared/corpus``
    next to the repository (a checkout elsewhere, such as a git worktree, sets the variable)."""
    configured = os.environ.get("SMALTO_CORPUS_ROOT")
    root = Path(configured) if configured else REPO_ROOT.parent / "shared" / "corpus"
    return root if (root / "index.json").is_file() else None


def load_entries(root: Path) -> list[CorpusEntry]:
    """All entries of ``root/index.json``, sorted by key."""
    index = json.loads((root / "index.json").read_text())
    return [
        CorpusEntry(
            key=key,
            path=root / f"{key}.mlir",
            arch=(int(info["arch"][0]), int(info["arch"][1])),
            jax_ok=bool(info["jax_infer_ok"]),
        )
        for key, info in sorted(index.items())
    ]


def bundled_entries() -> list[CorpusEntry]:
    """The sample of the corpus that ships with the repository (``tests/corpus``)."""
    return load_entries(BUNDLED_ROOT)


def selected_entries(which: str | None = None) -> tuple[str, list[CorpusEntry]]:
    """The corpus the differential tests use, and its name (``full``/``bundled``).

    ``which`` (default: ``$SMALTO_CORPUS``) forces ``full`` or ``bundled``;
    otherwise the shared corpus is used when present. ``full`` means every
    ``kernels/`` module plus the Hopper and Blackwell modules of
    ``mosaic_tests/`` and ``pallas_tests/``.
    """
    which = which or os.environ.get("SMALTO_CORPUS") or None
    root = corpus_root()
    if which not in (None, "full", "bundled"):
        raise ValueError(f"SMALTO_CORPUS must be 'full' or 'bundled', not {which!r}")
    if which == "bundled" or (which is None and root is None):
        return "bundled", bundled_entries()
    if root is None:
        raise FileNotFoundError("SMALTO_CORPUS=full but ../shared/corpus is missing")
    entries = [
        e
        for e in load_entries(root)
        if e.folder == "kernels"
        or (e.folder in ("mosaic_tests", "pallas_tests") and e.arch in ((9, 0), (10, 0)))
    ]
    return "full", entries


@functools.cache
def _mlir() -> tuple[Any, Any, Any]:
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib import mosaic_gpu_dialect as mgpu
    from jax._src.lib.mlir import ir

    return ir, jmlir, mgpu


def make_context() -> Any:
    """A fresh ``ir.Context`` with the upstream dialects and ``mosaic_gpu``."""
    _, jmlir, mgpu = _mlir()
    ctx = jmlir.make_ir_context()
    mgpu.register_dialect(ctx)
    return ctx


@functools.cache
def shared_context() -> Any:
    """One context for the whole process (creating one per module is wasteful)."""
    return make_context()


def read_text(path_or_text: Path | str) -> str:
    if isinstance(path_or_text, Path):
        return path_or_text.read_text()
    return path_or_text


def text_arch(text: str) -> tuple[int, int]:
    """The arch a module's text says it targets (``mosaic_gpu.arch_major``), else Hopper."""
    major = re.search(r"mosaic_gpu\.arch_major = (\d+)", text)
    return (int(major.group(1)), 0) if major else (9, 0)


def parse(path_or_text: Path | str, ctx: Any) -> Any:
    """Parse a module from a file (a ``Path``) or from MLIR text (a ``str``)."""
    ir, _, _ = _mlir()
    with ctx, ir.Location.unknown():
        return ir.Module.parse(read_text(path_or_text))


DUMP_NAME = "mosaic_gpu.dump_basename"


def pop_dump_name(module: Any) -> str | None:
    """Removes the module's dump name (which JAX's pass, and smalto, set once the rules
    have run, even when the search then fails); returns it, or None if it had none."""
    ir, _, _ = _mlir()
    attributes = module.operation.attributes
    if DUMP_NAME not in attributes:
        return None
    name = ir.StringAttr(attributes[DUMP_NAME]).value
    del attributes[DUMP_NAME]
    return name


def layout_attributes(module: Any) -> Attributes:
    """The layout attributes on every op, in pre-order over all ops.

    The op identifier is ``f"{index}:{op.name}"`` where ``index`` counts all
    ops (annotated or not) in pre-order, so it is stable between separately
    parsed copies of the same text. Only annotated ops are listed.
    """
    ir, _, _ = _mlir()
    result: Attributes = []
    index = 0

    def visit(op: Any) -> Any:
        nonlocal index
        attrs = op.attributes
        found = {name: str(attrs[name]) for name in LAYOUT_ATTRIBUTE_NAMES if name in attrs}
        if found:
            result.append((f"{index}:{op.name}", found))
        index += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return result


def _timed_inference(
    infer: Callable[[Any], None], path_or_text: Path | str, ctx: Any | None
) -> tuple[Attributes, float]:
    ir, _, _ = _mlir()
    ctx = ctx if ctx is not None else shared_context()
    module = parse(path_or_text, ctx)
    with ctx, ir.Location.unknown():
        start = time.perf_counter()
        infer(module)
        seconds = time.perf_counter() - start
    return layout_attributes(module), seconds


def jax_attributes(
    path_or_text: Path | str, arch: Arch, ctx: Any | None = None
) -> tuple[Attributes, float]:
    """Run JAX's pass (uncached) on a fresh parse; raise what it raises.

    Returns the attributes and the seconds spent in ``infer_layout`` alone.
    """
    from jax.experimental.mosaic.gpu import layout_inference

    return _timed_inference(
        lambda m: layout_inference.infer_layout(m, arch=arch), path_or_text, ctx
    )


def smalto_attributes(
    path_or_text: Path | str, arch: Arch, ctx: Any | None = None
) -> tuple[Attributes, float]:
    """Run smalto's pass on a fresh parse; raise what it raises.

    Returns the attributes and the seconds spent in ``infer_layout`` alone.
    """
    import smalto

    return _timed_inference(lambda m: smalto.infer_layout(m, arch=arch), path_or_text, ctx)


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def jax_version() -> str:
    import jax

    return jax.__version__


def cache_path(path: Path, arch: Arch, cache_dir: Path = CACHE_DIR) -> Path:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return cache_dir / f"{digest[:32]}-jax{jax_version()}-sm{arch[0]}{arch[1]}.json"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """The result of one pass on one module: attributes, or an error message."""

    attributes: Attributes | None
    error: str | None
    seconds: float
    cached: bool = False


def jax_outcome(
    path: Path, arch: Arch, *, use_cache: bool = True, cache_dir: Path = CACHE_DIR
) -> Outcome:
    """JAX's result on ``path`` for ``arch``, from the cache when possible.

    Errors are cached too. ``seconds`` is the time of the run that produced
    the result (the cached one, when cached).
    """
    file = cache_path(path, arch, cache_dir)
    if use_cache and file.is_file():
        try:
            data = json.loads(file.read_text())
            attributes = data["attributes"]
            return Outcome(
                attributes=None
                if attributes is None
                else [(op, dict(attrs)) for op, attrs in attributes],
                error=data["error"],
                seconds=float(data["seconds"]),
                cached=True,
            )
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache file is recomputed
    try:
        attributes, seconds = jax_attributes(path, arch)
        outcome = Outcome(attributes, None, seconds)
    except Exception as e:  # noqa: BLE001 -- any failure of JAX's pass is a result
        outcome = Outcome(None, _error_text(e), 0.0)
    if use_cache:
        _write_atomically(
            file,
            {
                "key": path.name,
                "arch": list(arch),
                "jax": jax_version(),
                "attributes": outcome.attributes,
                "error": outcome.error,
                "seconds": outcome.seconds,
            },
        )
    return outcome


def smalto_outcome(path: Path, arch: Arch) -> Outcome:
    """smalto's result on ``path`` for ``arch`` (never cached)."""
    try:
        attributes, seconds = smalto_attributes(path, arch)
        return Outcome(attributes, None, seconds)
    except Exception as e:  # noqa: BLE001 -- any failure is reported, not raised
        return Outcome(None, _error_text(e), 0.0)


def _write_atomically(file: Path, data: object) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=file.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.replace(tmp, file)


def run_jax(path: Path, arch: Arch) -> tuple[Attributes | None, str | None]:
    """JAX's attributes (cached), or its error message."""
    outcome = jax_outcome(path, arch)
    return outcome.attributes, outcome.error


def run_smalto(path: Path, arch: Arch) -> tuple[Attributes | None, str | None]:
    """smalto's attributes, or its error message."""
    outcome = smalto_outcome(path, arch)
    return outcome.attributes, outcome.error


def diff_attributes(jax: Attributes, smalto: Attributes) -> list[str]:
    """Differences, one line each: op, attribute, JAX's value, smalto's value.

    Empty when identical. A missing attribute is shown as ``<absent>``.
    """
    a, b = dict(jax), dict(smalto)
    lines = []
    for op in sorted(a.keys() | b.keys(), key=_op_order):
        attrs_a, attrs_b = a.get(op, {}), b.get(op, {})
        for name in LAYOUT_ATTRIBUTE_NAMES:
            va, vb = attrs_a.get(name), attrs_b.get(name)
            if va != vb:
                lines.append(f"{op} {name}: jax={va or '<absent>'} smalto={vb or '<absent>'}")
    return lines


def _op_order(op: str) -> tuple[int, str]:
    index, _, name = op.partition(":")
    return (int(index), name) if index.isdigit() else (-1, op)
