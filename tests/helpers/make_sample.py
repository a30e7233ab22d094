"""Regenerate the bundled corpus sample in ``tests/corpus`` from ``../shared/corpus``.

    python tests/helpers/make_sample.py

Copies every ``kernels/`` and ``fuel_exhausted/`` module, and picks
``PALLAS`` modules from ``pallas_tests/`` and ``MOSAIC`` from
``mosaic_tests/``: greedily, the module that adds the most op names not yet
covered (ties: the smaller file); once no module adds one, the module that
adds the most new (op name, arch) pairs and (op name, layout kinds JAX
writes) pairs; once none adds any, the smallest module of the test
class sampled least so far. Deterministic for a given corpus.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference  # noqa: E402

PALLAS = 60
MOSAIC = 30
# Used by test_differential.test_reference_is_deterministic.
REQUIRED = (
    "pallas_tests/PipelineWGTest.test_emit1",
    "mosaic_tests/MosaicGpuDialectTCGen05Test.test_tcgen05_mma30",
)
KIND = re.compile(r"#mosaic_gpu\.(\w+)|swizzle<(\d+)")


def op_names(path: Path, ctx: object) -> set[str]:
    module = reference.parse(path, ctx)
    ir, _, _ = reference._mlir()
    names: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        names.add(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return names


def features(entry: reference.CorpusEntry, ctx: object) -> tuple[set[str], set[str]]:
    """(op names, secondary features) of one module."""
    names = op_names(entry.path, ctx)
    arch = f"{entry.arch[0]}.{entry.arch[1]}"
    secondary = {f"{name}@{arch}" for name in names}
    attributes, _ = reference.run_jax(entry.path, entry.arch)
    for op, attrs in attributes or []:
        name = op.split(":", 1)[1]
        for attr, value in attrs.items():
            kinds = sorted({a or f"swizzle{b}" for a, b in KIND.findall(value)})
            secondary.add(f"{name}:{attr}:{','.join(kinds)}")
    return names, secondary


def pick(entries: list[reference.CorpusEntry], count: int, ctx: object) -> list[str]:
    size = {e.key: e.path.stat().st_size for e in entries}
    feats = {e.key: features(e, ctx) for e in entries}
    chosen = [k for k in REQUIRED if k in feats]
    covered_names = set().union(*(feats[k][0] for k in chosen))
    covered_other = set().union(*(feats[k][1] for k in chosen))
    while len(chosen) < count:
        rest = [k for k in sorted(feats) if k not in chosen]
        best = max(
            rest,
            key=lambda k: (
                len(feats[k][0] - covered_names),
                len(feats[k][1] - covered_other),
                -size[k],
            ),
        )
        if not feats[best][0] - covered_names and not feats[best][1] - covered_other:
            break
        chosen.append(best)
        covered_names |= feats[best][0]
        covered_other |= feats[best][1]

    def test_class(key: str) -> str:
        return key.split("/", 1)[1].split(".")[0]

    while len(chosen) < count and len(chosen) < len(feats):
        per_class = Counter(test_class(k) for k in chosen)
        rest = [k for k in sorted(feats) if k not in chosen]
        chosen.append(min(rest, key=lambda k: (per_class[test_class(k)], size[k], k)))
    print(
        f"{entries[0].folder}: {len(chosen)} modules, {len(covered_names)} op names, "
        f"{len(covered_other)} secondary features",
        file=sys.stderr,
    )
    return sorted(chosen)


def main() -> None:
    root = reference.corpus_root()
    if root is None:
        sys.exit("../shared/corpus is missing")
    entries = reference.load_entries(root)
    by_folder: dict[str, list[reference.CorpusEntry]] = {}
    for e in entries:
        by_folder.setdefault(e.folder, []).append(e)
    ctx = reference.make_context()
    keys = [e.key for e in by_folder["kernels"] + by_folder["fuel_exhausted"]]
    keys += pick(by_folder["pallas_tests"], PALLAS, ctx)
    keys += pick(by_folder["mosaic_tests"], MOSAIC, ctx)

    out = reference.BUNDLED_ROOT
    for folder in by_folder:
        shutil.rmtree(out / folder, ignore_errors=True)
    index = json.loads((root / "index.json").read_text())
    for key in keys:
        (out / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / f"{key}.mlir", out / f"{key}.mlir")
    sample = {key: index[key] for key in sorted(keys)}
    (out / "index.json").write_text(json.dumps(sample, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(keys)} modules to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
