"""``smalto draw FILE %N``: the layout smalto infers for a kernel's value, drawn at the
value's own shape and element type, with the names ``smalto explain`` (and ``infer``)
use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smalto.cli.draw import build_parser, draw_main, panels_to_draw
from smalto.cli.values import kernel_value
from smalto.draw.subject import subject_of
from smalto.hw.names import describe_value

KERNEL = Path(__file__).resolve().parents[2] / "examples" / "hopper_matmul.mlir"


def _explained(name: str, capsys: pytest.CaptureFixture) -> dict:
    from smalto.cli.explain import explain_main

    assert explain_main([str(KERNEL), name, "--json"]) == 0
    (value,) = json.loads(capsys.readouterr().out)["values"]
    return value


def _vector_type(text: str) -> tuple[tuple[int, ...], str]:
    """(shape, element type) of ``vector<128x128xf32>`` or ``memref<4x128x64xf16, ...>``."""
    body = text.split("<", 1)[1].split(",")[0].rstrip(">")
    *dims, element = body.split("x")
    return tuple(int(d) for d in dims), element


@pytest.mark.parametrize("name", ["@282", "%129"])
def test_a_value_is_drawn_at_its_own_shape_type_and_layout(
    name: str, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    explained = _explained(name, capsys)
    shape, element = _vector_type(explained["type"])
    subject = subject_of(build_parser().parse_args([str(KERNEL), name]), kernel_value)
    assert subject.shape == shape
    assert subject.element_type == element == subject.dtype
    assert describe_value(subject.layout) == explained["layout"]
    assert subject.title.startswith(f"{explained['name']} (line {explained['line']}): ")
    panels, default, _ = panels_to_draw(
        build_parser().parse_args([str(KERNEL), name]), kernel_value
    )
    titles = [g.title for item in panels for g in (item if isinstance(item, tuple) else (item,))]
    dims = "x".join(map(str, shape))
    if subject.kind == "register":  # the accumulator of the wgmma at line 282
        assert explained["layout"] == "WGMMA"
        assert any(t.startswith(f"{subject.title}: {dims} {element} in registers") for t in titles)
    else:  # an SMEM ref the kernel tiles and swizzles
        assert explained["layout"] == "tiled 8×64 + swizzle 128"
        assert any(
            t.startswith(f"SMEM {dims} {element}, tile 8x64, 128-byte swizzle") for t in titles
        )
    assert default.startswith("hopper_matmul_") and default.endswith(f"_{dims}_{element}.png")
    out = tmp_path / "value.png"
    assert draw_main([str(KERNEL), name, "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([str(KERNEL), "%999"], "no value named %999"),
        ([str(KERNEL), "%97"], "%97 names 2 values: %97 (line 295), %97 (line 161); "
         "name one by its line: @295 or @161"),
        ([str(KERNEL)], "name the value of"),
        ([str(KERNEL), "%134", "--shape", "64x64"], "--shape and --dtype come from %134"),
    ],
)  # fmt: skip
def test_values_that_cannot_be_drawn(
    argv: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    assert draw_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_note_on_a_name_of_the_input_is_said_on_stderr_by_the_command(
    capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """%2 of the generic-form input is %cst_1 of the printed module (whose %2 has no layout):
    the subject hands the note up and `smalto draw` says it, as explain does; stdout holds
    only what the command did."""
    flash = KERNEL.parent / "flash_attention_fwd.mlir"
    subject = subject_of(build_parser().parse_args([str(flash), "%2"]), kernel_value)
    (said,) = subject.notes
    assert said.startswith(f"%2 of {flash} is %cst_1 (line 8) in the printed module")
    capsys.readouterr()
    out = tmp_path / "cst.png"
    assert draw_main([str(flash), "%2", "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.out == f"wrote {out}\n"
    assert f"smalto draw: note: {said}\n" in printed.err


def test_the_warp_of_a_value(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out = tmp_path / "w.png"
    assert draw_main([str(KERNEL), "@282", "--warp", "2", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "warp 2 (threads 64-95) holds 4096 of 16384 elements" in text
    assert "rows: 32-47, 96-111 (of 128)" in text


def test_smem_with_a_value_needs_bank_conflicts(capsys: pytest.CaptureFixture) -> None:
    assert draw_main([str(KERNEL), "%95#0", "--smem", "tile=8x32"]) == 2
    assert "drop --smem (or add --bank-conflicts" in capsys.readouterr().err
    args = [str(KERNEL), "%95#0", "--smem", "tile=8x32,swizzle=16", "--bank-conflicts",
            "--no-picture"]  # fmt: skip
    assert draw_main(args) == 0
    text = capsys.readouterr().out
    assert text.startswith("store of 128x128 f32 in WGMMA (%95#0, line 260) to SMEM tiled 8x32")
    assert "to remove them: --smem tile=8x32,swizzle=128" in text


@pytest.mark.parametrize("name", ["@282", "%129"])
def test_explain_draws_the_value_as_draw_does(
    name: str, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """`smalto explain FILE %N --draw`: the explanation, then the very picture `smalto draw
    FILE %N` makes (one inference, shared code)."""
    from smalto.cli.draw import draw_main as draw_command
    from smalto.cli.explain import explain_main

    drawn = tmp_path / "draw.png"
    assert draw_command([str(KERNEL), name, "-o", str(drawn)]) == 0
    capsys.readouterr()
    explained = tmp_path / "explain.png"
    assert explain_main([str(KERNEL), name, "--draw", "-o", str(explained)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{_explained(name, capsys)['name']} (line ")
    assert out.rstrip().endswith(f"wrote {explained}")
    assert explained.read_bytes() == drawn.read_bytes()


def test_explain_draws_several_values_to_their_default_names(
    capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smalto.cli.explain import explain_main

    monkeypatch.chdir(tmp_path)
    assert explain_main([str(KERNEL), "@282", "%129", "--draw"]) == 0
    wrote = [
        line.split()[1]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("wrote ")
    ]
    assert len(wrote) == 2 and all((tmp_path / name).is_file() for name in wrote)
    assert all(name.startswith("hopper_matmul_") for name in wrote)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["%129", "-o", "x.png"], "-o names the picture of --draw"),
        (["--draw"], "--draw draws the values named"),
        (["%129", "--draw", "--json"], "choose one"),
        (["%129", "@282", "--draw", "-o", "x.png"], "-o names one picture"),
        (["%0", "--draw"], "%0"),
    ],
)
def test_explain_draw_usage(args: list[str], fragment: str, capsys: pytest.CaptureFixture) -> None:
    from smalto.cli.explain import explain_main

    assert explain_main([str(KERNEL), *args]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("smalto explain: error: ") and fragment in line, line
