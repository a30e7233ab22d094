"""``import smalto.infer`` loads what a first answer needs and nothing more (issue #52: on
JAX's route, the first kernel pays the import). In a fresh process, after JAX's Mosaic
GPU package: the import loads none of the modules that only a failure, an explanation,
a rescue, a picture or a command reads, and a first answer on a kernel JAX lays out
loads no module beyond the import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import reference

REPO = Path(__file__).resolve().parents[2]
KERNEL = reference.BUNDLED_ROOT / "kernels" / "custom_elementwise_chain_grid.mlir"

# Packages no first answer reads: the faces, the failure's words and fixes, the rescues,
# the checker, SMEM reports.
NOT_PACKAGES = (
    "smalto.cli",
    "smalto.jax",
    "smalto.report",
    "smalto.draw",
    "smalto.rescue",
    "smalto.diagnose",
    "smalto.rewrite",
    "smalto.check",
    "smalto.smem",
)
# Modules of the pass's own packages that only a failure, a search beyond JAX's order,
# a message or a note reads.
NOT_MODULES = (
    "smalto.constraints.conflict_report",
    "smalto.solve.complete",
    "smalto.solve.domains",
    "smalto.solve.for_diagnosis",
    "smalto.hw.names",
    "smalto.hw.jax_text",
    "smalto.basics.version",
    "smalto.pipeline.speed",
    "smalto.pipeline.relayouts",
    "smalto.pipeline.describe",
    "smalto.source.files",
)

_PROBE = """
import json, sys
import jax.experimental.mosaic.gpu
before = set(sys.modules)
import smalto.infer
imported = sorted(set(sys.modules) - before)
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import mosaic_gpu_dialect
from jax._src.lib.mlir import ir
context = jax_mlir.make_ir_context()
mosaic_gpu_dialect.register_dialect(context)
with context, ir.Location.unknown():
    module = ir.Module.parse(open(sys.argv[1]).read())
    smalto.infer.infer_layout(module, arch=(9, 0))
answered = sorted(name for name in set(sys.modules) - before if name.split(".")[0] == "smalto")
print(json.dumps([imported, answered]))
"""


def _loaded() -> tuple[list[str], list[str]]:
    """The modules ``import smalto.infer`` loads beyond JAX's package, and smalto's loaded
    once it has answered a kernel (in a fresh process)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(KERNEL)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported, answered = json.loads(done.stdout.strip().splitlines()[-1])
    return imported, answered


def test_the_import_loads_only_what_a_first_answer_needs() -> None:
    imported, answered = _loaded()
    assert "smalto.pipeline.steps" in imported  # (the probe imported the pass)
    unneeded = [
        name
        for name in imported
        if name in NOT_MODULES or any(name.startswith(f"{p}.") or name == p for p in NOT_PACKAGES)
    ]
    assert not unneeded, f"import smalto.infer loads {unneeded}"
    # Nothing of the standard library beyond what JAX's package loaded either (a TOML
    # parser for the version, say).
    assert all(name.split(".")[0] == "smalto" for name in imported), imported
    # The first answer, on a kernel JAX lays out, loads nothing more.
    assert answered == imported, sorted(set(answered) - set(imported))
