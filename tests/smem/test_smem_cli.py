"""``smalto smem``: the table, ``--json``, the picture (PNG and SVG), the page, exit statuses,
bad input; a Pallas function through ``SCRIPT.py:FUNCTION``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run

TESTS = Path(__file__).resolve().parents[1]
BLACKWELL_MATMUL = TESTS / "corpus" / "kernels" / "blackwell_matmul_t128x128x64_s4.mlir"
DEEP = TESTS / "smem_kernels" / "deep_pipeline.py"
ARGS = ("--arg", "f16[256,512]", "--arg", "f16[512,256]")


def test_the_table() -> None:
    ran = run("smem", BLACKWELL_MATMUL)
    assert ran.status == 0, ran.err
    lines = ran.out.splitlines()
    assert lines[0].startswith(
        "kernel_mosaic_gpu: 164996 bytes of dynamic SMEM (161.1 KiB, the launch's); limit "
        "232448 bytes a block on sm_100: 67452 bytes to spare"
    )
    assert lines[1].startswith("peak: the allocations reach byte 164996 at ")
    header = next(line for line in lines if line.startswith("offset"))
    assert header.split() == ["offset", "bytes", "padded", "kind", "type", "ops", "line"]
    row = next(line for line in lines if "4x64x128xf16" in line)
    assert row.split()[:6] == ["98304", "65536", "65536", "pipeline", "buffer", "4x64x128xf16"]
    assert f"{BLACKWELL_MATMUL.name}:243:" in row  # the module's line where it has no other
    padded = next(line for line in lines if "2x16xi8" in line)
    assert padded.split()[:3] == ["163840", "32", "1024"]


def test_json() -> None:
    ran = run("smem", BLACKWELL_MATMUL, "--json")
    assert ran.status == 0, ran.err
    document = json.loads(ran.out)
    assert document["dynamic_smem_bytes"] == 164996 and document["limit_bytes"] == 232448
    assert document["over_limit_bytes"] == 0 and document["cuts"] == []
    assert document["launch_reserved_bytes"] == 132
    kinds = {a["kind"] for a in document["allocations"]}
    assert kinds == {"pipeline buffer", "scratch", "barriers", "TMEM address"}
    tmem = next(a for a in document["allocations"] if a["kind"] == "TMEM address")
    assert (tmem["offset"], tmem["bytes"], tmem["padded_bytes"]) == (164992, 4, 4)
    assert document["peak"]["bytes"] == 164996 and document["peak"]["in_use_bytes"] == 132228


@pytest.mark.parametrize("suffix", ["svg", "png"])
def test_the_picture(tmp_path: Path, suffix: str) -> None:
    picture = tmp_path / f"map.{suffix}"
    ran = run("smem", BLACKWELL_MATMUL, "--picture", picture)
    assert ran.status == 0, ran.err
    assert f"wrote {picture}" in ran.err
    data = picture.read_bytes()
    if suffix == "png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        text = data.decode()
        assert text.startswith("<?xml") and "<svg" in text
        for label in ("4x128x64xf16", "limit: 232448", "launch: 164996", "pipeline buffer"):
            assert label in text


def test_the_picture_needs_a_known_format(tmp_path: Path) -> None:
    ran = run("smem", BLACKWELL_MATMUL, "--picture", tmp_path / "map.gif")
    assert ran.status == 2 and "use .png or .svg" in ran.err


def test_the_page(tmp_path: Path) -> None:
    page = tmp_path / "smem.html"
    ran = run("smem", BLACKWELL_MATMUL, "--report", page)
    assert ran.status == 0, ran.err
    text = page.read_text()
    assert '<section id="smem"><h2>Shared memory</h2>' in text and "<svg" in text
    assert "4x64x128xf16 (4 stages)" in text


def test_infer_report_has_the_section(tmp_path: Path) -> None:
    page = tmp_path / "layouts.html"
    ran = run("infer", BLACKWELL_MATMUL, "--report", page)
    assert ran.status == 0, ran.err
    assert '<section id="smem"><h2>Shared memory</h2>' in page.read_text()


def test_bad_input(tmp_path: Path) -> None:
    missing = run("smem", tmp_path / "nothing.mlir")
    assert missing.status == 2 and "Traceback" not in missing.err
    broken = tmp_path / "broken.mlir"
    broken.write_text("module {\n  %0 = \n}\n")
    ran = run("smem", broken)
    assert ran.status == 2 and "Traceback" not in ran.err
    args = run("smem", BLACKWELL_MATMUL, "--arg", "f16[8]")
    assert args.status == 2 and "--arg is for SCRIPT.py:FUNCTION" in args.err


def test_a_pallas_function_over_the_limit(tmp_path: Path) -> None:
    ran = run("smem", f"{DEEP}:matmul", *ARGS, "--json")
    assert ran.status == 1
    assert "asks for 294944 bytes of SMEM, 62496 over the 232448 a block may have" in ran.err
    document = json.loads(ran.out)
    first = document["cuts"][0]
    assert first["kind"] == "fewer pipeline stages" and first["brings_under"]
    assert first["total_bytes"] == 229400 and first["applicability"] == "MaybeIncorrect"
    # The function takes its stages as a keyword: it was lowered again with three.
    assert first["jax_lowering"] is True
    assert first["verified"] == (
        "verified: the kernel lowered again with max_concurrent_steps=3 takes 229400 bytes, "
        "within the limit"
    )
    scoped = next(c for c in document["cuts"] if c["kind"] == "a scratch scoped tighter")
    assert scoped["jax_lowering"] is True


def test_the_documented_example_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md's ``smalto smem`` example: its lines are what it prints."""
    import re

    text = (TESTS.parent / "docs" / "cli.md").read_text()
    found = re.search(r"^\$ (smalto smem \S+)\s+# in (\S+)\n(.*?)\n```", text, re.M | re.S)
    assert found is not None
    command, folder, shown = found.groups()
    monkeypatch.chdir(TESTS.parent / folder)
    ran = run(*command.split()[1:])
    assert ran.status == 0, ran.err
    printed = ran.out.splitlines()
    shown_lines = shown.splitlines()
    assert printed[:2] == shown_lines[:2]
    assert all(line in printed for line in shown_lines if line.strip() != "...")
