"""An import-linter contract for what its own contracts leave out: circles between modules.

``acyclic_siblings`` looks for circles between the children of each package,
so a circle through a package's ``__init__`` and one of its own modules (the
rule registry in ``smalto/rules/__init__.py`` imported back by a dialect's
rules) passes it. This contract takes every module of the package as a node,
every import as an edge (grimp's graph: function-local imports and those under
``TYPE_CHECKING`` included) and fails on each strongly connected set of more
than one module, naming a circle through it with the lines of its imports.

Registered in ``pyproject.toml`` (``[tool.importlinter] contract_types``);
``lint-imports`` runs from the repository root, where ``tests`` imports as a
namespace package.
"""

from __future__ import annotations

from typing import Any

import grimp
from importlinter.application import contract_utils, output
from importlinter.application.contract_utils import AlertLevel
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AcyclicModulesContract(Contract):
    """No module of ``package`` reaches itself again through its imports.

    Options: ``package``, the package whose modules (itself included) are checked;
    ``ignore_imports`` and ``unmatched_ignore_imports_alerting`` as import-linter's
    own contracts take them.
    """

    type_name = "acyclic_modules"

    package = fields.StringField()
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)
    unmatched_ignore_imports_alerting = fields.EnumField(AlertLevel, default=AlertLevel.ERROR)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=self.unmatched_ignore_imports_alerting,  # type: ignore[arg-type]
        )
        package = str(self.package)
        modules = sorted({package, *graph.find_descendants(package)})
        edges = {
            module: sorted(
                m for m in graph.find_modules_directly_imported_by(module) if m in modules
            )
            for module in modules
        }
        circles = [
            _circle_through(component, edges)
            for component in strongly_connected(edges)
            if len(component) > 1
        ]
        details = [
            [
                (importer, imported, _lines(graph, importer, imported))
                for importer, imported in zip(circle, circle[1:] + circle[:1], strict=True)
            ]
            for circle in circles
        ]
        sizes = sorted((len(c) for c in strongly_connected(edges) if len(c) > 1), reverse=True)
        return ContractCheck(
            kept=not circles,
            metadata={"circles": details, "sizes": sizes},
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        sizes = ", ".join(map(str, check.metadata["sizes"]))
        output.print_error(f"Modules in circles of imports (sizes {sizes}); one circle of each:")
        output.new_line()
        for circle in check.metadata["circles"]:
            for importer, imported, lines in circle:
                output.print_error(f"  {importer} -> {imported} (l. {lines})")
            output.new_line()


def _lines(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    details: list[dict[str, Any]] = graph.get_import_details(importer=importer, imported=imported)
    return ", ".join(str(d["line_number"]) for d in details) or "?"


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected sets of a graph (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(edges[successor])))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def _circle_through(component: list[str], edges: dict[str, list[str]]) -> list[str]:
    """A shortest circle through the first module of a strongly connected set."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in edges[node]:
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                if successor in members and successor not in came_from:
                    came_from[successor] = node
                    following.append(successor)
        frontier = following
    return [start]
