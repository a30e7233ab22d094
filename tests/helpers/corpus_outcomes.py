"""Every corpus module's outcome under smalto, written down to compare two checkouts.

    PYTHONPATH=CHECKOUT python tests/helpers/corpus_outcomes.py OUT.jsonl
        [--corpus full|all] [-k TEXT]

For each module and each of three settings (the defaults, ``allow_unoptimized``,
``stage_through_smem``): the module as printed after ``smalto.infer_layout``, or
the refusal (the exception's type and whole message), with the warnings it gave.
One JSON line per module and setting, in a fixed order; two runs (before and
after a change of shape, each with its own checkout on ``PYTHONPATH``) are
compared with ``diff`` or ``--compare A B``. ``--corpus all`` adds the modules
the differential leaves out (``fuel_exhausted/``, the other archs).

The checkout whose smalto runs is the one on ``PYTHONPATH``: this script puts
none of its own on ``sys.path`` but its folder (for ``reference``), so that the
baseline can run from another, unmodified checkout.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference  # noqa: E402

SETTINGS: dict[str, dict[str, bool]] = {
    "default": {},
    "allow_unoptimized": {"allow_unoptimized": True},
    "stage_through_smem": {"stage_through_smem": True},
}


def outcome(entry: reference.CorpusEntry, setting: dict[str, bool], ctx: Any) -> dict[str, Any]:
    """The printed module or the refusal, and the warnings, for one module and setting."""
    import smalto

    ir, _, _ = reference._mlir()
    module = reference.parse(entry.path, ctx)
    with ctx, ir.Location.unknown(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            smalto.infer_layout(module, arch=entry.arch, **setting)
            result = str(module)
        except Exception as e:  # noqa: BLE001 -- every refusal is the outcome written down
            result = f"{type(e).__name__}: {e}"
    told = [f"{w.category.__name__}: {w.message}" for w in caught]
    return {"result": result, "warnings": told}


def entries(which: str) -> list[reference.CorpusEntry]:
    if which == "full":
        return reference.selected_entries("full")[1]
    root = reference.corpus_root()
    if root is None:
        raise SystemExit("the shared corpus is missing")
    return reference.load_entries(root)


def write(out: Path, which: str, only: str | None) -> None:
    chosen = [e for e in entries(which) if only is None or only in e.key]
    ctx = reference.make_context()
    with out.open("w") as f:
        for n, entry in enumerate(chosen, 1):
            for name, setting in SETTINGS.items():
                row = {"key": entry.key, "setting": name, **outcome(entry, setting, ctx)}
                f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            if n % 100 == 0:
                print(f"{n}/{len(chosen)}", file=sys.stderr)


def compare(a: Path, b: Path) -> int:
    """Prints where two dumps differ; 0 where they are the same line for line."""
    rows_a = [json.loads(line) for line in a.read_text().splitlines()]
    rows_b = [json.loads(line) for line in b.read_text().splitlines()]
    if len(rows_a) != len(rows_b):
        print(f"{len(rows_a)} rows against {len(rows_b)}")
        return 1
    differ = [(x, y) for x, y in zip(rows_a, rows_b, strict=True) if x != y]
    for x, y in differ:
        print(f"{x['key']} [{x['setting']}]: {str(x)[:300]} -- against -- {str(y)[:300]}")
    refused = sum(1 for r in rows_a if not r["result"].startswith("module"))
    print(f"{len(rows_a)} outcomes ({refused} refusals): {len(differ)} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--corpus", choices=("full", "all"), default="full")
    parser.add_argument("-k", dest="only")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("OUT is needed (or --compare A B)")
    write(args.out, args.corpus, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
