"""An independent checker for annotated Mosaic GPU modules.

``check(module, arch=...)`` reads the layout attributes already on a module
(written by smalto, by JAX's pass or by hand) and verifies, op by op and from
those attributes alone, that every op can be lowered with them:

- each op carries one ``in_/out_layouts`` entry per vector, one
  ``in_/out_transforms`` entry per transformable SMEM ref and one
  ``in_/out_tmem_layouts`` entry per TMEM ref, and every entry fits its value;
- each op's own requirements hold (MMA accumulators and operands, SMEM <->
  register and TMEM <-> register transfers, tilings that divide slices,
  reductions, broadcasts, reshapes, casts, loops...);
- between a producer and each consumer a register value only changes layout
  where that is free (from a splat), and a memory ref keeps its transforms.

It shares nothing with the solver but the hardware facts (``smalto.hw``) and
the program view (``smalto.program.view``): the requirements are written here again,
from the ops' semantics, so that a bug in a rule is not repeated by the check.

The package is split like ``smalto.rules``: ``core`` (the checker's state and
shared requirements), ``decode`` (attributes to sites), ``flow`` (what holds
between ops), ``walk`` (the driver), one module per dialect (``arith``,
``vector``, ``scf``, ``memref``, ``mosaic_gpu``, ``copies``, ``tmem``), the
facts they share (``smem``: SMEM transforms as written and their validity;
``transfers``: SMEM <-> register feasibility through the lowering's own
schedule; ``relayouts``; ``mma``). Its command line, ``smalto check``, is a face of
the package (``smalto.cli.check``): the checker itself imports nothing above
the ground.
The requirements are jax 0.12.0.1's lowering's.

The checker is this package's ``check`` (``smalto.check.check(module, arch)``,
or ``from smalto.check import check``); ``smalto.check`` is the package, not
a function (``smalto`` binds its subpackage to that name on import).
"""

from smalto.check.core import Violation
from smalto.check.walk import check

__all__ = ["Violation", "check"]
