"""The pass's side effects beyond layouts: the dump name, and the constraint system dump.

Like JAX 0.12.0.1's pass, smalto asks jaxlib for the module's dump options once
the rules have run: this names the module (``mosaic_gpu.dump_basename =
"<sym_name or mosaic_gpu_module>_<N>"``, N counted across the process, shared
with JAX's own calls) unless it has a name already, and reads
``MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM`` and ``MOSAIC_GPU_DUMP_TO``. When asked,
the system is printed to stdout (or to ``<dump_basename>.constraint_system.txt``
under ``MOSAIC_GPU_DUMP_TO``), as JAX does; but as smalto's requirements, in
words, each with its op and source position.
"""

from __future__ import annotations

import logging
import os
from typing import TextIO

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir

from smalto.constraints.language import System
from smalto.program.view import Program

DUMP_ATTRIBUTE = "mosaic_gpu.dump_basename"

# A dump that cannot be written is logged, as JAX's own dump logs it (a library's
# word: an application decides whether and where it is shown).
_logger = logging.getLogger(__name__)


def dump_options(module: ir.Module) -> mgpu.DumpOptions:
    """jaxlib's dump options for ``module``; names the module if it has no dump name."""
    return mgpu.get_or_set_dump_options(module)


def system_text(program: Program, system: System, name: str = "") -> str:
    """The constraint system as a person reads it: one requirement a line, with op and place."""
    # (Imported when a system is dumped: the words for requirements read the user's source,
    # which a pass that dumps nothing never loads.)
    from smalto.pipeline.describe import Namer, describe_element

    namer = Namer(program, system)
    title = f" for {name}" if name else ""
    lines = [
        f"# smalto constraint system{title}: {len(system.variables)} variables, "
        f"{len(system.fixed)} fixed layouts, {len(system.constraints)} constraints",
        "variables:",
    ]
    for variable in system.variables:
        kind = variable.kind.name.lower()
        sites = ", ".join(namer.site_text(s) for s in variable.sites[:4])
        more = f" and {len(variable.sites) - 4} more" if len(variable.sites) > 4 else ""
        lines.append(f"  v{variable.id} {namer.typed(variable.id)} [{kind}]: {sites}{more}")
    lines.append("fixed:")
    lines += [f"  {describe_element(f, program, namer)}" for f in system.fixed]
    lines.append("constraints:")
    lines += [f"  {describe_element(c, program, namer)}" for c in system.constraints]
    return "\n".join(lines) + "\n"


def after_derivation(
    module: ir.Module, program: Program, system: System, to: TextIO | None = None
) -> None:
    """What the pass does between its rules and its search: name the module, dump if asked.

    ``to`` is where a caller (the ``--dump-system`` flag) wants the system,
    whatever the environment says.
    """
    options = dump_options(module)
    name = options.module_basename
    if to is not None:
        to.write(system_text(program, system, name))
        to.flush()
    if options.constraint_system:
        text = system_text(program, system, name)
        directory = options.dump_path
        if not directory:
            print(text, end="")
            return
        path = os.path.join(directory, f"{name}.constraint_system.txt")
        from smalto.basics.writing import write_file

        try:
            write_file(path, text)  # whole or not at all
        except OSError as error:
            # As JAX does: a dump that cannot be written is logged, and goes to stdout instead.
            _logger.error("Failed to write output to %s: %s", path, error)
            _logger.error("Output will be written to stdout instead.")
            print(text, end="")
