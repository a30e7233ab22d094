"""The pass: read, derive, solve, write (``steps``).

``validate`` refuses what smalto cannot take before anything runs, ``describe`` says
each requirement of the derived system in words (for the dump and the diagnosis),
``dump`` gives the pass's side effects beyond layouts (the dump name, the system
dump), and ``annotate`` writes the answer as the attributes JAX's lowering reads.
Above it: ``smalto.infer`` (the rescues and the diagnosis when it finds no layouts);
below it: the solver, the rules and the constraint language.
"""
