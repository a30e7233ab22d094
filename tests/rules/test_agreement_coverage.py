"""The agreement test reaches every line of the rules and the checker, but those on a list.

``tests/rules/test_rules_agree_with_checks.py`` runs in a subprocess under
``coverage``; every line of ``smalto/rules/`` and ``smalto/check/`` it leaves
unreached must be named, with a reason, in
``tests/rules/agreement_coverage_allowed.txt`` (format and a command that writes
the missing entries: ``tests/helpers/agreement_coverage.py``). A new branch of a
rule or a check that no generator reaches fails here, as does an entry that no
longer names an unreached line.
"""

from __future__ import annotations

from pathlib import Path

from agreement_coverage import as_sections, compare, read_allow_list, run_under_coverage, unreached


def test_every_unreached_line_of_the_rules_and_the_checker_is_on_the_list(
    tmp_path: Path,
) -> None:
    data = tmp_path / "coverage"
    run_under_coverage(data)
    lines = unreached(data)
    assert lines, "coverage measured nothing: the agreement test ran outside smalto/rules?"
    result = compare(lines, read_allow_list())
    assert not result.no_reason, "allow-list sections without a reason:\n" + "\n".join(
        result.no_reason
    )
    assert not result.unexplained, (
        f"{len(result.unexplained)} lines of the rules or the checker that the agreement test "
        "does not reach: make a generator (tests/helpers/rule_kernels_*.py) reach them, or add "
        "them to tests/rules/agreement_coverage_allowed.txt with a reason:\n\n"
        + as_sections(result.unexplained)
    )
    assert not result.stale, (
        "allow-list entries that no longer name an unreached line (now reached, moved or "
        "removed): take them off\n" + "\n".join(result.stale)
    )
