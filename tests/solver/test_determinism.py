"""Determinism: the same module gives byte-identical output, run after run.

Within a process (fresh parses), and across processes with different
``PYTHONHASHSEED`` values, so that no result depends on the order of a set or
a hash: the annotated modules, the error message of an unsatisfiable module
and the checker's findings must not change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import reference

import smalto

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests" / "helpers"

# (path relative to the repository, arch): kernels with loops, wgmma, TMEM, reductions.
KERNELS = [
    ("examples/hopper_matmul.mlir", (9, 0)),
    ("tests/corpus/kernels/flash_attn_fwd_wg_hd128_b64x128.mlir", (9, 0)),
    ("tests/corpus/kernels/custom_fori_while_cond.mlir", (9, 0)),
    ("tests/corpus/kernels/custom_reductions_rowcol_bcast_hint.mlir", (9, 0)),
    ("tests/corpus/kernels/custom_tcgen05_mma_tmem_epilogue.mlir", (10, 0)),
    ("tests/corpus/kernels/blackwell_matmul_t128x128x64_s4.mlir", (10, 0)),
]
UNSAT = """func.func @k() {
  %c = "arith.constant"() <{value = dense<1.0> : vector<128x128xf32>}> : () -> vector<128x128xf32>
  %a = "mosaic_gpu.layout_cast"(%c) <{new_layout = #mosaic_gpu.WGStridedFragLayout<[128, 128], 4>}> : (vector<128x128xf32>) -> vector<128x128xf32>
  %b = "mosaic_gpu.layout_cast"(%a) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<128x128xf32>) -> vector<128x128xf32>
  "func.return"() : () -> ()
}
"""  # noqa: E501

# Run in a fresh interpreter: prints, as JSON, every output this test compares.
SCRIPT = """
import json, sys
from pathlib import Path
sys.path[:0] = [{tests!r}, {repo!r}]
import reference, smalto
from smalto.check import check
kernels, unsat = json.loads(sys.argv[1]), sys.argv[2]
ctx = reference.shared_context()
out = {{}}
for path, arch in kernels:
    module = reference.parse(Path(path), ctx)
    smalto.infer_layout(module, arch=tuple(arch))
    out[path] = module.operation.get_asm(print_generic_op_form=True)
module = reference.parse(unsat, ctx)
try:
    smalto.infer_layout(module)
except smalto.InferenceError as error:
    out["unsat"] = str(error)
module = reference.parse(Path(kernels[0][0]), ctx)
out["check"] = [str(v) for v in check(module)]
print(json.dumps(out))
"""


def _outputs(seed: str) -> dict[str, object]:
    kernels = [(str(REPO / path), list(arch)) for path, arch in KERNELS]
    script = SCRIPT.format(tests=str(TESTS), repo=str(REPO))
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(kernels), UNSAT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_same_output_in_one_process() -> None:
    ctx = reference.shared_context()
    for path, arch in KERNELS:
        texts = set()
        for _ in range(2):
            module = reference.parse(REPO / path, ctx)
            smalto.infer_layout(module, arch=arch)
            texts.add(module.operation.get_asm(print_generic_op_form=True))
        assert len(texts) == 1, path


def test_same_output_across_hash_seeds() -> None:
    first = _outputs("0")
    assert set(first) == {str(REPO / p) for p, _ in KERNELS} | {"unsat", "check"}
    assert str(first["unsat"]).startswith(smalto.FAILURE_PREFIX)
    assert first["check"]  # the unannotated kernel misses every attribute
    for seed in ("1", "4242"):
        other = _outputs(seed)
        for key in first:
            assert other[key] == first[key], f"{key} differs with PYTHONHASHSEED={seed}"
