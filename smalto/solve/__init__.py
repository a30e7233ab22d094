"""Solving a constraint system: evaluation, candidates, propagation and search.

The layer between the pass (``smalto.pipeline``, which hands it the system the rules
derived) and the constraint language it reads (``smalto.constraints``):
``evaluate`` judges a constraint under a partial assignment, ``candidates`` offers
values in JAX's preference order, ``domains`` the complete search's finite domains;
``propagation`` is the one state every search works on (with its trail),
``fuel`` its fuel's accounting; ``jax_order`` searches in JAX's order,
``complete`` over the domains, ``widened`` past what JAX's rules offer;
``options`` holds the settings of one inference (``SolveOptions``); ``search``
puts them together (``Solver``, ``decide``).
"""
