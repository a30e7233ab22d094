"""The unit-dim rewrite inside ``smalto.infer_layout`` and the CLI: when it runs,
what it says, how to turn it off, and that a failure leaves the module as it came."""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import pytest
import reference
from equivalence import assert_equivalent
from jax._src.lib.mlir import ir
from mlir_snippets import parse
from rms_norm import BID, RMS_NORM, UNSAT, _loc

import smalto
import smalto.rewrite.webs
from smalto.check import check
from smalto.cli.main import main
from smalto.program.reader import read_program

# (A dump name of its own: a failed inference leaves the module exactly as it came.)


# Written without keepdims: infers as written.
NO_KEEPDIMS = (
    RMS_NORM.replace(
        f"%keep = {BID}(%sum : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>",
        "%keep = arith.addf %sum, %zero : vector<128xf32>",
    )
    .replace("vector<128x1xf32>", "vector<128xf32>")
    .replace("<broadcast_dimensions = [0, 1]>", "<broadcast_dimensions = [0]>")
)


def _text(module: ir.Module) -> str:
    return str(module.operation.get_asm(enable_debug_info=True))


def _infer(module: ir.Module, **kwargs) -> None:
    with module.context, ir.Location.unknown():
        smalto.infer_layout(module, arch=(9, 0), **kwargs)


def test_a_keepdims_module_is_rewritten_and_inferred() -> None:
    module = parse(RMS_NORM)
    with pytest.warns(smalto.UnitDimRewriteWarning) as warned:
        _infer(module)
    (warning,) = warned
    # Shown at the first user line it names, every rewritten op listed with its place.
    assert (warning.filename, warning.lineno) == ("rms.py", 11)
    message = str(warning.message)
    assert "rewrite=False" in message
    rewritten = warning.message.rewritten
    assert [r.op for r in rewritten] == [
        BID,
        "arith.constant",
        "arith.divf",
        "arith.constant",
        "arith.addf",
        "math.rsqrt",
        BID,
    ]
    for record in rewritten:
        assert f"{record.location}: `{record.op}`" in message
    assert rewritten[0].location == "rms.py:11:13"
    assert "removed" in rewritten[0].change and "(128,)" in rewritten[0].change
    # The module itself: rewritten in place, verifies, annotated, and the checker agrees.
    text = _text(module)
    assert "vector<128x1xf32>" not in text
    assert module.operation.verify()
    assert "out_layouts" in text
    assert check(module, (9, 0)) == []


def test_the_rewritten_module_stores_what_the_module_as_written_does() -> None:
    written, rewritten = parse(RMS_NORM), parse(RMS_NORM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
        _infer(rewritten)
    assert_equivalent(written, rewritten)


def test_no_diagnosis_is_made_where_the_rewritten_module_infers(monkeypatch) -> None:
    """Diagnosing the module as written is most of what its failure costs; where the
    rewrite then succeeds, nobody reads it, so it is not made."""
    import smalto.diagnose.problems

    def refuse(*_: object) -> None:
        raise AssertionError("a diagnosis was made")

    # (Where ``smalto.infer`` finds it when a message is first made.)
    monkeypatch.setattr(smalto.diagnose.problems, "describe_conflict", refuse)
    module = parse(RMS_NORM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
        _infer(module)
    assert check(module, (9, 0)) == []


def test_rewrite_false_turns_it_off() -> None:
    module = parse(RMS_NORM)
    before = _text(module)
    with warnings.catch_warnings():
        warnings.simplefilter("error", smalto.UnitDimRewriteWarning)
        with pytest.raises(smalto.InferenceError) as failed:
            _infer(module, rewrite=False)
    assert str(failed.value).startswith(smalto.FAILURE_PREFIX)
    assert not failed.value.notes
    assert _text(module) == before


def test_a_failure_leaves_the_module_as_it_came_and_names_the_module_as_written() -> None:
    module = parse(UNSAT)
    before = _text(module)
    with pytest.raises(smalto.InferenceError) as without:
        _infer(parse(UNSAT), rewrite=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", smalto.UnitDimRewriteWarning)
        with pytest.raises(smalto.InferenceError) as failed:
            _infer(module)
    assert _text(module) == before
    # The error about the module as written (the same words), then the note, in the
    # message itself (where every door shows it), once.
    (note,) = failed.value.notes
    assert "unit-dim rewrite" in note
    assert str(failed.value) == f"{without.value}\n{note}"
    assert not getattr(failed.value, "__notes__", ())
    # (And in a copy made elsewhere: a pickled error says it, once.)
    copied = pickle.loads(pickle.dumps(failed.value))
    assert str(copied) == str(failed.value) and copied.notes == (note,)
    # Its traceback still ends at the user's line, as without the rewrite.
    assert failed.value.__traceback__ is not None
    last = failed.value.__traceback__
    while last.tb_next is not None:
        last = last.tb_next
    assert last.tb_frame.f_code.co_filename == "rms.py"


def test_a_module_that_infers_as_written_is_never_even_walked(monkeypatch) -> None:
    """The rewrite costs nothing where it is not needed: it does not look at the module."""

    def walked(*_args, **_kwargs):
        raise AssertionError("the rewrite looked at a module that infers as written")

    monkeypatch.setattr(smalto.rewrite.webs, "find_webs", walked)
    monkeypatch.setattr(smalto.rewrite.webs, "ops_in_order", walked)
    module = parse(NO_KEEPDIMS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", smalto.UnitDimRewriteWarning)
        _infer(module)
    assert "out_layouts" in _text(module)


def test_a_refused_module_without_unit_dims_is_never_walked(monkeypatch) -> None:
    """Where no vector of the module has a unit dim there is no web: the rewrite does not
    walk the module (the walk was a seventh of the time a refusal took)."""
    entries = reference.load_entries(Path(__file__).parents[1] / "unoptimized")
    refused_without = 0
    for entry in entries:
        module = reference.parse(entry.path, reference.shared_context())
        with module.context:
            if smalto.rewrite.webs.may_have_webs(read_program(module)):
                continue

        def walked(*_args, **_kwargs):
            raise AssertionError("the rewrite walked a module with no vector of unit dims")

        with monkeypatch.context() as patch:
            patch.setattr(smalto.rewrite.webs, "find_webs", walked)
            with pytest.raises(smalto.InferenceError), module.context, ir.Location.unknown():
                smalto.infer_layout(module, arch=entry.arch)
        refused_without += 1
    assert refused_without >= 3


@pytest.mark.parametrize(
    "entry", reference.bundled_entries(), ids=lambda entry: entry.key.replace("/", ".")
)
def test_every_module_with_a_web_has_a_vector_of_unit_dims(entry) -> None:
    """The pre-check never skips a module the rewrite could change (every module bundled)."""
    module = reference.parse(entry.path, reference.shared_context())
    with module.context:
        webs = smalto.rewrite.webs.find_webs(module)
        assert smalto.rewrite.webs.may_have_webs(read_program(module)) == bool(webs)


def test_an_op_without_a_rule_is_not_a_reason_to_rewrite(monkeypatch) -> None:
    def walked(*_args, **_kwargs):
        raise AssertionError("the rewrite ran on a module with an op smalto has no rule for")

    monkeypatch.setattr(smalto.rewrite.webs, "find_webs", walked)
    text = RMS_NORM.replace(
        "%inv = math.rsqrt %plus",
        '%inv = "math.cbrt"(%plus) : (vector<128x1xf32>) -> vector<128x1xf32> '
        f"{_loc(12, 23)}\n    %unused = math.rsqrt %plus",
    )
    with pytest.raises(NotImplementedError, match="math.cbrt"):
        _infer(parse(text))


def test_the_rewrite_is_deterministic() -> None:
    first, second = parse(RMS_NORM), parse(RMS_NORM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
        _infer(first)
        _infer(second)
    assert _text(first) == _text(second)


# --- The CLI ------------------------------------------------------------------------


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "kernel.mlir"
    path.write_text(text)
    return str(path)


def test_cli_prints_the_rewritten_module_and_a_note_per_op(tmp_path, capsys) -> None:
    assert main(["infer", _write(tmp_path, RMS_NORM)]) == 0
    out, err = capsys.readouterr()
    assert "vector<128x1xf32>" not in out and "out_layouts" in out
    notes = [line for line in err.splitlines() if line.startswith("smalto: note: ")]
    assert len(notes) == 7
    assert notes[0].startswith("smalto: note: rms.py:11:13: `mosaic_gpu.broadcast_in_dim` removed")
    assert all(re.match(r"smalto: note: rms.py:\d+:\d+: `", n) for n in notes)


def test_cli_no_rewrite(tmp_path, capsys) -> None:
    assert main(["infer", "--no-rewrite", _write(tmp_path, RMS_NORM)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"smalto: error: {smalto.FAILURE_PREFIX}")
    assert "unit-dim rewrite" not in err  # (no rewrite tried, no rescue note)
    # The kernel file (rms.py) is not there to quote: one note says so.
    assert (
        "smalto: note: source lines not shown: rms.py not found in the current directory "
        f"or beside {tmp_path}/"
    ) in err.splitlines()


def test_cli_failure_says_the_rewrite_was_tried(tmp_path, capsys) -> None:
    assert main(["infer", _write(tmp_path, UNSAT)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"smalto: error: {smalto.FAILURE_PREFIX}")
    assert "unit-dim rewrite" in err


def test_cli_explain_explains_the_rewritten_module(tmp_path, capsys) -> None:
    """`smalto explain` rewrites as `smalto infer` does, and names values and lines as in
    the module `smalto infer` prints (the rewritten one)."""
    path = _write(tmp_path, RMS_NORM)
    assert main(["infer", path]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert main(["explain", path]) == 0
    out, err = capsys.readouterr()
    notes = [line for line in err.splitlines() if line.startswith("smalto explain: note: ")]
    assert len(notes) == 7 and "`mosaic_gpu.broadcast_in_dim` removed" in notes[0]
    explained = re.findall(r"^(%\w+) \(line (\d+), ", out, flags=re.MULTILINE)
    assert len(explained) == 11  # each vector of the rewritten module, none of (128, 1)
    for name, line in explained:
        assert printed[int(line) - 1].lstrip().startswith(f"{name} = ")
    # The statistic, now a (128,) value, has the row layout of the reduction it comes from.
    (rsqrt,) = [line for line in out.splitlines() if line.startswith("%5 ")]
    assert "WGMMA_ROW" in rsqrt
    assert "math.rsqrt" in printed[int(dict(explained)["%5"]) - 1]


def test_cli_explain_no_rewrite(tmp_path, capsys) -> None:
    assert main(["explain", "--no-rewrite", _write(tmp_path, RMS_NORM)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"smalto explain: error: {smalto.FAILURE_PREFIX}")
    assert "unit-dim rewrite" not in err  # (no rewrite tried, no rescue note)
