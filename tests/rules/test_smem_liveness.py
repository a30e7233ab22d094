"""The liveness of SMEM bytes (``smalto.program.smem_liveness``, issue #50): which bytes may
take a staging buffer around an op, and which overlaps the checker reports.

Hand-written kernel bodies (a ``func.func`` stands for the ``gpu.launch`` body): TMA
copies out of SMEM live until ``wait_group 0``, a wait for fewer groups ending none;
TMA loads and MMA operands never proven ended; a buffer read across a loop's back
edge live at the loop's top; two scopes at one offset apart in time; views of an
allocation (subview, transpose, with_transforms) its own bytes; warpgroup
conditions recognised as Pallas writes them.
"""

from __future__ import annotations

from typing import Any

from rule_kit import parse

from smalto.program.smem_liveness import EVERYWHERE, Access, Interval, SmemLiveness

SMEM = "#gpu.address_space<workgroup>"
TILE = f"memref<64x64xf32, {SMEM}>"  # 16 KiB
GMEM = "memref<64x64xf32>"
INTS = f"memref<64x64xi32, {SMEM}>"
HALF = f"memref<32x64xf32, {SMEM}>"


def _body(lines: list[str], arguments: str = "") -> tuple[Any, SmemLiveness, dict[str, Any]]:
    """A function of these lines (``%v`` a 64x64 f32 vector, ``%g`` a GMEM ref, ``%n`` an
    i32, ``%b`` an i1 among its arguments) and its analysis; ops by their ``tag``."""
    text = (
        "module {\n"
        f"  func.func @k(%v: vector<64x64xf32>, %g: {GMEM}, %n: i32, %b: i1{arguments}) {{\n"
        + "\n".join(f"    {line}" for line in lines)
        + "\n    return\n  }\n}\n"
    )
    module = parse(text)
    (function,) = [op.operation for op in module.body.operations]
    liveness = SmemLiveness(function)
    tagged = {}
    for op in liveness.node_of:
        if "tag" in op.attributes:
            tagged[str(op.attributes["tag"]).strip('"')] = op
    return module, liveness, tagged


def _slice(name: str, offset: int, ty: str = TILE) -> str:
    return f'%{name} = "mosaic_gpu.slice_smem"() <{{offset = {offset} : i32}}> : () -> {ty}'


def _store(ref: str, tag: str = "", ty: str = TILE) -> str:
    tagged = f' {{tag = "{tag}"}}' if tag else ""
    return (
        f'"mosaic_gpu.vector_store"(%v, %{ref}) <{{optimized = true}}>{tagged} : '
        f"(vector<64x64xf32>, {ty}) -> ()"
    )


def _load(ref: str, result: str, tag: str = "", ty: str = TILE) -> str:
    tagged = f' {{tag = "{tag}"}}' if tag else ""
    return (
        f'%{result} = "mosaic_gpu.vector_load"(%{ref}) <{{optimized = true}}>{tagged} : '
        f"({ty}) -> vector<64x64xf32>"
    )


def _tma_out(ref: str) -> str:
    return (
        f'"mosaic_gpu.async_store"(%{ref}, %g, %n, %n) <{{commit_group = true, '
        "is_global_broadcast = false, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>, "
        f"slice_lengths = array<i64: 64, 64>}}> : ({TILE}, {GMEM}, i32, i32) -> ()"
    )


def _wait(groups: int) -> str:
    return f"nvvm.cp.async.bulk.wait_group {groups} read"


A = Interval(0, 16384)
B = Interval(16384, 32768)


def test_a_tma_copy_out_of_smem_is_live_until_a_wait_for_every_group() -> None:
    lines = [
        _slice("a", 0),
        _store("a"),
        _tma_out("a"),
        _store("a", "before the wait"),  # (the same buffer rewritten: the kernel's own race)
        _wait(1),
        _store("a", "after a partial wait"),
        _wait(0),
        _store("a", "after the wait"),
    ]
    _, liveness, ops = _body(lines)
    for tag, live in [
        ("before the wait", True),
        ("after a partial wait", True),
        ("after the wait", False),
    ]:
        assert liveness.bulk_in_flight(liveness.node_of[ops[tag]], A) is live, tag
    # Other bytes are not read by the copy.
    assert not liveness.bulk_in_flight(liveness.node_of[ops["before the wait"]], B)
    assert liveness.dead_around(ops["after the wait"], A, after=False)
    assert not liveness.dead_around(ops["before the wait"], A, after=False)


def test_a_buffer_read_after_the_op_is_live_unless_all_of_it_is_written_first() -> None:
    lines = [
        _slice("a", 0),
        _store("a", "first"),
        _load("a", "x"),  # read: the first store's data is needed here
        _store("a", "second"),  # a write of all of it: nothing older is read after
        _load("a", "y"),
        # A partial write (a view of half) does not end what the rest holds.
        "%half = memref.subview %a[0, 0] [32, 64] [1, 1] : "
        f"{TILE} to memref<32x64xf32, strided<[64, 1]>, {SMEM}>",
        '"memref.store"(%n_f, %half, %c0, %c0) {tag = "partial"} : '
        f"(f32, memref<32x64xf32, strided<[64, 1]>, {SMEM}>, index, index) -> ()",
        _load("a", "z", "last read"),
    ]
    lines.insert(0, "%c0 = arith.constant 0 : index")
    lines.insert(1, "%n_f = arith.constant 1.0 : f32")
    _, liveness, ops = _body(lines)
    # Around the first store (before it), the bytes are dead: it writes them all.
    assert liveness.dead_around(ops["first"], A, after=False)
    # After the partial write, the last read still reads what the second store wrote.
    assert not liveness.dead_around(ops["partial"], A, after=True)
    # After the last read, nothing reads them again.
    assert liveness.dead_around(ops["last read"], A, after=True)


def test_views_of_an_allocation_are_its_bytes() -> None:
    lines = [
        _slice("a", 0),
        '%t = "mosaic_gpu.with_transforms"(%a) <{transforms = [#mosaic_gpu.tile<[8, 32]>, '
        f"#mosaic_gpu.swizzle<128 : i32>]}}> : ({TILE}) -> {TILE}",
        f"%tt = memref.transpose %t (d0, d1) -> (d1, d0) : {TILE} to "
        f"memref<64x64xf32, strided<[1, 64]>, {SMEM}>",
        _store("tt", "whole view", f"memref<64x64xf32, strided<[1, 64]>, {SMEM}>"),
        _load("a", "x", "read"),
    ]
    _, liveness, ops = _body(lines)
    (event,) = liveness.events[liveness.node_of[ops["whole view"]]]
    assert event.interval == A and event.access == Access.KILL  # a transposed view: all of it
    (read,) = liveness.events[liveness.node_of[ops["read"]]]
    assert read.allocation == event.allocation
    assert not liveness.dead_around(ops["whole view"], A, after=True)


def test_a_buffer_read_across_a_loop_back_edge_is_live_at_the_loop_top() -> None:
    lines = [
        "%c0 = arith.constant 0 : i32",
        "%c4 = arith.constant 4 : i32",
        "%c1 = arith.constant 1 : i32",
        _slice("a", 0),
        _store("a"),
        "scf.for %i = %c0 to %c4 step %c1 : i32 {",
        "  " + _store("s", "top", TILE),
        "  " + _load("a", "x"),  # reads what the store before the loop wrote, each trip
        "  " + _load("s", "y"),
        "  " + _store("a", "rewrite"),  # rewritten at the end of each trip: read next trip
        "}",
    ]
    lines.insert(4, _slice("s", 16384))
    _, liveness, ops = _body(lines)
    # ``a``'s bytes are live at the top of every trip (read there, written at the end of
    # the last trip or before the loop): no buffer may take them around ``top``.
    assert not liveness.dead_around(ops["top"], A, after=False)
    assert liveness.dead_around(ops["top"], B, after=False)  # (s: written all at ``top``)
    assert not liveness.dead_around(ops["rewrite"], A, after=True)


def test_two_scopes_at_one_offset_are_apart_and_unknown_bytes_are_never_dead() -> None:
    lines = [
        _slice("a", 0),
        _store("a", "scope 1"),
        _load("a", "x"),
        _slice("c", 0, INTS),  # the next scope, the same bytes as another type
        f'"mosaic_gpu.vector_store"(%w, %c) <{{optimized = true}}> {{tag = "scope 2"}} : '
        f"(vector<64x64xi32>, {INTS}) -> ()",
        f'%y = "mosaic_gpu.vector_load"(%c) <{{optimized = true}}> : ({INTS}) -> vector<64x64xi32>',
        # A ref the analysis cannot trace (an argument) may be any byte: TMA-loaded into.
        '"mosaic_gpu.async_load"(%g, %u, %bar, %n, %n) <{collective = [], oob_fill_mode = '
        "2 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = "
        f"array<i64: 64, 64>}}> : ({GMEM}, {TILE}, memref<!mosaic_gpu.barrier, {SMEM}>, i32, "
        "i32) -> ()",
    ]
    arguments = f", %u: {TILE}, %bar: memref<!mosaic_gpu.barrier, {SMEM}>, %w: vector<64x64xi32>"
    _, liveness, ops = _body(lines, arguments)
    assert not liveness.clobbers()  # sequential scopes: no overlap while live
    assert liveness.tracked(EVERYWHERE) and liveness.tracked(A)
    assert not liveness.dead_around(ops["scope 2"], A, after=False)


def test_the_checker_question_finds_a_buffer_overwritten_while_another_holds_it() -> None:
    lines = [
        _slice("a", 0),
        _slice("d", 8192, HALF),  # the second half of a's bytes
        "%c0 = arith.constant 0 : index",
        "%one = arith.constant 1.0 : f32",
        _store("a"),
        f'"memref.store"(%one, %d, %c0, %c0) {{tag = "clobber"}} : (f32, {HALF}, index, '
        "index) -> ()",
        _load("a", "x"),  # a's data, some of it overwritten
        _tma_out("a"),
        f'"memref.store"(%one, %d, %c0, %c0) : (f32, {HALF}, index, index) -> ()',
        _wait(0),
    ]
    _, liveness, ops = _body(lines)
    clobbers = liveness.clobbers()
    assert len(clobbers) == 1  # one report per pair of buffers
    (first,) = clobbers
    assert liveness.ops[first.node] == ops["clobber"]
    assert first.writer.interval == Interval(8192, 16384) and first.holder.interval == A


def test_warpgroup_conditions_are_recognised_as_pallas_writes_them() -> None:
    lines = [
        "%c7 = arith.constant 7 : i32",
        "%c1 = arith.constant 1 : i32",
        "%c0 = arith.constant 0 : i32",
        "%cm1 = arith.constant -1 : i32",
        "%c31 = arith.constant 31 : i32",
        "%tx = gpu.thread_id x",
        "%t = arith.index_cast %tx : index to i32",
        "%w = arith.shrui %t, %c7 : i32",
        "%wg = nvvm.shfl.sync idx %cm1, %w, %c0, %c31 : i32 -> i32",
        "%is1 = arith.cmpi eq, %wg, %c1 : i32",
        "%e = arith.extui %is1 : i1 to i32",
        "%i = arith.index_cast %e : i32 to index",
        _slice("a", 0),
        "scf.index_switch %i",
        "case 0 {",
        "  " + _store("a", "other"),
        "  scf.yield",
        "}",
        "default {",
        "  " + _store("a", "warpgroup 1"),
        "  scf.yield",
        "}",
        "scf.if %b {",
        "  " + _store("a", "any"),
        "}",
    ]
    _, liveness, ops = _body(lines)
    assert liveness.guard_of(ops["warpgroup 1"]) == {1}
    assert liveness.guard_of(ops["other"]) == frozenset()
    assert liveness.guard_of(ops["any"]) == frozenset()
    assert not liveness.guarded_to(A, 1)


def test_the_upstream_dialects_reads_and_writes_of_smem_are_accesses() -> None:
    """``vector.load``/``vector.store`` and ``memref.load``/``memref.store`` on an SMEM ref
    read and write its bytes (the ref is their first, resp. second operand)."""
    lines = [
        "%c0 = arith.constant 0 : index",
        _slice("a", 0),
        f'%x = vector.load %a[%c0, %c0] {{tag = "vector load"}} : {TILE}, vector<64x64xf32>',
        f'vector.store %x, %a[%c0, %c0] {{tag = "vector store"}} : {TILE}, vector<64x64xf32>',
        f'%s = memref.load %a[%c0, %c0] {{tag = "memref load"}} : {TILE}',
        f'memref.store %s, %a[%c0, %c0] {{tag = "memref store"}} : {TILE}',
    ]
    _, liveness, ops = _body(lines)
    for tag, access in [
        ("vector load", Access.READ),
        ("vector store", Access.WRITE),
        ("memref load", Access.READ),
        ("memref store", Access.WRITE),
    ]:
        (event,) = liveness.events[liveness.node_of[ops[tag]]]
        assert event.access == access and event.interval == A, tag


def test_a_loop_that_carries_another_buffer_proves_nothing_dead() -> None:
    """Double buffers swapped through a loop's carries: what the carry views changes from
    trip to trip, so no byte is proven dead (and the checker reports nothing)."""
    lines = [
        "%c0 = arith.constant 0 : i32",
        "%c4 = arith.constant 4 : i32",
        "%c1 = arith.constant 1 : i32",
        _slice("a", 0),
        _slice("s", 16384),
        f"%r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%p = %a, %q = %s) -> ({TILE}, "
        f"{TILE}) : i32 {{",
        "  " + _store("p", "store"),
        "  " + _load("q", "x"),
        f"  scf.yield %q, %p : {TILE}, {TILE}",
        "}",
    ]
    _, liveness, ops = _body(lines)
    assert liveness.unsound_carry
    assert not liveness.dead_around(ops["store"], B, after=False)
    assert not liveness.clobbers()


# --- asynchronous accesses whose end a wait in the same block proves ----------------------

F16 = f"memref<64x64xf16, {SMEM}>"  # 8 KiB
BARRIER = f"memref<1x!mosaic_gpu.barrier, {SMEM}>"
TC_BARRIER = f"memref<!mosaic_gpu.barrier<orders_tensor_core = true>, {SMEM}>"
A16 = Interval(0, 8192)
B16 = Interval(8192, 16384)


def _wgmma(tag: str = "mma") -> str:
    return (
        f'%r = "mosaic_gpu.wgmma"(%acc, %x, %y) {{tag = "{tag}"}} : '
        f"(vector<64x64xf32>, {F16}, {F16}) -> vector<64x64xf32>"
    )


def _asm(text: str, tag: str = "") -> str:
    tagged = f' {{tag = "{tag}"}}' if tag else ""
    return (
        f'"llvm.inline_asm"() <{{asm_string = "{text}", constraints = "", has_side_effects}}>'
        f"{tagged} : () -> ()"
    )


def _commit() -> str:
    return _asm("wgmma.commit_group.sync.aligned;")


def _wgmma_wait(groups: int, tag: str = "") -> str:
    return _asm(f"wgmma.wait_group.sync.aligned {groups};", tag)


def _operands(*, barrier: bool = False) -> list[str]:
    lines = [
        _slice("x", 0, F16),
        _slice("y", 8192, F16),
        _slice("o", 0, TILE),  # a buffer over both operands' bytes (a reuse)
        "%acc = arith.constant dense<0.0> : vector<64x64xf32>",
    ]
    if barrier:
        lines += [
            _slice("bar", 16384, BARRIER),
            f"%bp = builtin.unrealized_conversion_cast %bar : {BARRIER} to !llvm.ptr<3>",
        ]
    return lines


def _mbarrier_wait(pointer: str = "bp", tag: str = "") -> str:
    tagged = f' {{tag = "{tag}"}}' if tag else ""
    return (
        f'"nvvm.mbarrier.try_wait.parity"(%{pointer}, %n, %n){tagged} : '
        "(!llvm.ptr<3>, i32, i32) -> ()"
    )


def test_a_wgmmas_operands_are_read_until_the_wait_for_every_group_after_its_commit() -> None:
    lines = [
        *_operands(),
        _wgmma(),
        _store("o", "before the commit"),
        _commit(),
        _wgmma_wait(1, "partial wait"),
        _store("o", "after a partial wait"),
        _wgmma_wait(0, "wait"),
        _store("o", "after the wait"),
    ]
    _, liveness, ops = _body(lines)
    mma = liveness.node_of[ops["mma"]]
    assert [e.access for e in liveness.events[mma]] == [Access.READ, Access.READ]
    (x, y) = liveness.spans
    assert (x.end, y.end) == (liveness.node_of[ops["wait"]],) * 2 and x.read
    for tag, in_flight in [
        ("before the commit", True),
        ("after a partial wait", True),
        ("after the wait", False),
    ]:
        assert liveness.dead_around(ops[tag], A, after=False) is not in_flight, tag
    assert not liveness.tracked(A)
    # The checker: the store before the wait writes bytes an MMA may still be reading
    # (one report for each operand it writes over).
    clobbers = liveness.clobbers()
    assert [c.holder.interval for c in clobbers] == [A16, B16]
    for clobber in clobbers:
        assert liveness.ops[clobber.node] == ops["before the commit"]
        assert clobber.why == "an MMA may still be reading those bytes (before the wait for it)"


def test_a_wgmma_waited_for_elsewhere_or_uncommitted_is_never_ended() -> None:
    uncommitted = [*_operands(), _wgmma(), _wgmma_wait(0), _store("o", "after")]
    _, liveness, ops = _body(uncommitted)
    assert not liveness.spans and liveness.tracked(A)
    assert not liveness.dead_around(ops["after"], A, after=False)
    # A wait after the loop that issues it ends nothing (the loop is handled conservatively).
    looped = [
        *_operands(),
        "%c0 = arith.constant 0 : i32",
        "%c4 = arith.constant 4 : i32",
        "%c1 = arith.constant 1 : i32",
        "scf.for %i = %c0 to %c4 step %c1 : i32 {",
        "  " + _wgmma(),
        "  " + _commit(),
        "}",
        _wgmma_wait(0),
        _store("o", "after"),
    ]
    _, liveness, ops = _body(looped)
    assert not liveness.spans and not liveness.dead_around(ops["after"], A, after=False)
    # Inside the loop's body, a wait after the commit ends that trip's MMA.
    looped[looped.index("}")] = "  " + _wgmma_wait(0)
    looped.insert(looped.index("  " + _wgmma_wait(0)) + 1, "}")
    _, liveness, ops = _body(looped)
    assert len(liveness.spans) == 2 and liveness.dead_around(ops["after"], A, after=False)


def test_a_wgmma_with_no_wait_before_a_write_over_its_operands_is_reported() -> None:
    """The mutant of a proven reuse: its wait dropped, the write is certainly made while the
    MMA may read."""
    lines = [*_operands(), _wgmma(), _commit(), _store("o", "clobber"), _wgmma_wait(0)]
    _, liveness, ops = _body(lines)
    whys = {c.why for c in liveness.clobbers()}
    assert whys == {"an MMA may still be reading those bytes (before the wait for it)"}
    lines.pop()  # no wait at all
    _, liveness, ops = _body(lines)
    clobbers = liveness.clobbers()
    assert len(clobbers) == 2 and all(liveness.ops[c.node] == ops["clobber"] for c in clobbers)
    assert {c.why for c in clobbers} == {
        "an MMA may still be reading those bytes (no wait for it comes first)"
    }


def _tcgen05(tag: str = "mma") -> list[str]:
    return [
        '"mosaic_gpu.tcgen05_mma"(%t, %x, %y, %false) <{collective = false, '
        'operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0>}> {tag = "' + tag + '"} : '
        f"(memref<64x64xf32, #mosaic_gpu.tmem>, {F16}, {F16}, i1) -> ()",
        f"%bm = builtin.unrealized_conversion_cast %bp : !llvm.ptr<3> to {TC_BARRIER}",
        f'"mosaic_gpu.tcgen05_commit_arrive"(%bm) <{{collective = false}}> : ({TC_BARRIER}) -> ()',
    ]


def test_a_tcgen05_mmas_operands_are_read_until_the_wait_on_its_commits_barrier() -> None:
    tmem = ", %t: memref<64x64xf32, #mosaic_gpu.tmem>"
    prefix = [
        *_operands(barrier=True),
        "%false = arith.constant false",
        _slice("bar2", 16392, BARRIER),
        f"%other = builtin.unrealized_conversion_cast %bar2 : {BARRIER} to !llvm.ptr<3>",
    ]
    lines = [
        *prefix,
        *_tcgen05(),
        _store("o", "before the wait"),
        _mbarrier_wait("other", "another barrier"),
        _mbarrier_wait(tag="wait"),
        _store("o", "after the wait"),
    ]
    _, liveness, ops = _body(lines, tmem)
    assert {s.end for s in liveness.spans} == {liveness.node_of[ops["wait"]]}
    assert not liveness.dead_around(ops["before the wait"], A, after=False)
    assert liveness.dead_around(ops["after the wait"], A, after=False)
    assert liveness.dead_around(ops["after the wait"], B16, after=False)
    # Another arrival on the barrier between the commit and the wait: nothing proven.
    arrive = f'"mosaic_gpu.arrive"(%bm) <{{orders_tensor_core = false}}> : ({TC_BARRIER}) -> ()'
    lines.insert(lines.index(_mbarrier_wait(tag="wait")), arrive)
    _, liveness, ops = _body(lines, tmem)
    assert not liveness.spans and not liveness.dead_around(ops["after the wait"], A, after=False)
    # A wait on a barrier the analysis cannot trace may be on this one: nothing proven.
    lines.remove(arrive)
    _, liveness, ops = _body(
        [line.replace("%other,", "%unknown,") for line in lines], tmem + ", %unknown: !llvm.ptr<3>"
    )
    assert not liveness.spans


def _tma_in(ref: str, barrier: str = "bb", tag: str = "") -> str:
    tagged = f' {{tag = "{tag}"}}' if tag else ""
    return (
        f'"mosaic_gpu.async_load"(%g16, %{ref}, %{barrier}, %n, %n) <{{collective = [], '
        "oob_fill_mode = 2 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, "
        f"slice_lengths = array<i64: 64, 64>}}>{tagged} : (memref<64x64xf16>, {F16}, "
        f"memref<!mosaic_gpu.barrier, {SMEM}>, i32, i32) -> ()"
    )


def test_a_tma_load_writes_until_the_wait_on_its_barrier() -> None:
    arguments = ", %g16: memref<64x64xf16>"
    lines = [
        *_operands(barrier=True),
        f"%bb = builtin.unrealized_conversion_cast %bp : !llvm.ptr<3> to "
        f"memref<!mosaic_gpu.barrier, {SMEM}>",
        _store("o", "holds"),
        _tma_in("x", tag="load"),
        _tma_in("y"),  # (another load on the barrier: the same phase)
        _load("o", "held", "in flight"),
        _mbarrier_wait(tag="wait"),
        _load("x", "after", ty=F16).replace("vector<64x64xf32>", "vector<64x64xf16>"),
    ]
    _, liveness, ops = _body(lines, arguments)
    load = liveness.node_of[ops["load"]]
    assert [e.access for e in liveness.events[load] if e.interval == A16] == [Access.KILL]
    assert {s.end for s in liveness.spans} == {liveness.node_of[ops["wait"]]}
    assert liveness.asynchronous_in_flight(liveness.node_of[ops["in flight"]], A16)
    assert not liveness.asynchronous_in_flight(liveness.node_of[ops["in flight"]], B)
    # The checker: ``o`` holds data the loads overwrite before it is read.
    clobbers = liveness.clobbers()
    assert [(c.writer.interval, c.holder.interval) for c in clobbers] == [(A16, A), (B16, A)]
    assert liveness.ops[clobbers[0].node] == ops["load"]
    assert {c.why for c in clobbers} == {"its data there is read later"}
    # ``o`` written after the loads are issued, read before their wait: the loads may land
    # over its data (reported at the load).
    lines.remove(_store("o", "holds"))
    read = lines.index(_load("o", "held", "in flight"))
    lines[read:read] = [_store("o", "holds"), "%z = arith.constant 0 : i32"]
    _, liveness, ops = _body(lines, arguments)
    landed = [c for c in liveness.clobbers() if c.writer.interval == A16]
    assert [liveness.ops[c.node] for c in landed] == [ops["load"]]
    assert landed[0].why == "a TMA load into it may land there before its data is read"
