"""The package reads in one direction: the import contracts of ``pyproject.toml``.

``lint-imports`` checks them (``make lint`` runs it too): no circle of imports
among smalto's modules, the layers from the faces down to the ground, the
checker independent of the solver, the solver's JAX part apart from smalto's own
searches. grimp's graph counts every import,
function-local ones and those under ``TYPE_CHECKING`` included. A broken
contract fails this test with the contract's name and the imports that break it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
from import_contracts import AcyclicModulesContract, strongly_connected
from importlinter import configuration
from importlinter.application.use_cases import read_user_options
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract

ROOT = Path(__file__).resolve().parents[2]
# ``lint-imports``, run by this interpreter (whatever its environment's scripts are called).
LINT = (
    "import sys; from importlinter.cli import lint_imports_command; "
    "lint_imports_command(sys.argv[1:])"
)


def test_the_import_contracts_are_kept() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _contract_options(contract_id: str) -> tuple[dict, dict]:
    """The session's and one contract's options, as ``lint-imports`` reads them."""
    configuration.configure()
    options = read_user_options(str(ROOT / "pyproject.toml"))
    (contract,) = [c for c in options.contracts_options if c.get("id") == contract_id]
    return dict(options.session_options), dict(contract)


def _graph() -> grimp.ImportGraph:
    """A fresh graph of the package (a contract may change the one it checks)."""
    return grimp.build_graph("smalto", cache_dir=None)


def _graph_with(importer: str, imported: str, names: str) -> grimp.ImportGraph:
    """The package's graph with one more import, ``from imported import names`` in
    ``importer``."""
    graph = _graph()
    graph.add_import(
        importer=importer,
        imported=imported,
        line_number=1,
        line_contents=f"from {imported} import {names}",
    )
    return graph


def test_an_import_up_the_layers_breaks_the_layers_contract() -> None:
    """The rules asking the diagnosis for something (what a function-local import
    once did) is what the layers forbid."""
    session, options = _contract_options("layers")
    contract = LayersContract(options["name"], session, options)
    assert contract.check(_graph(), verbose=False).kept
    upward = _graph_with("smalto.rules.context", "smalto.diagnose.conflict", "ConflictReport")
    assert not contract.check(upward, verbose=False).kept


def test_a_circle_breaks_the_no_circles_contract() -> None:
    """Also one through a package's own ``__init__``, which import-linter's
    ``acyclic_siblings`` does not see."""
    session, options = _contract_options("no-circles")
    contract = AcyclicModulesContract(options["name"], session, options)
    assert contract.check(_graph(), verbose=False).kept
    circle = _graph_with("smalto.rules.arith", "smalto.rules", "RuleContext")
    check = contract.check(circle, verbose=False)
    assert not check.kept
    assert check.metadata["sizes"] == [2]


def test_strongly_connected_sets() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e"]}
    found = sorted(strongly_connected(edges))
    assert found == [["a", "b", "c"], ["d"], ["e"]]


def test_the_jax_part_asking_smaltos_searches_breaks_its_contract() -> None:
    """The search in JAX's order reaching for the complete search (what a port of a JAX
    change must never need) is what the JAX part's contract forbids."""
    session, options = _contract_options("jax-search-apart")
    contract = ForbiddenContract(options["name"], session, options)
    assert contract.check(_graph(), verbose=False).kept
    reaching = _graph_with("smalto.solve.jax_search", "smalto.solve.complete", "CompleteSearch")
    assert not contract.check(reaching, verbose=False).kept
