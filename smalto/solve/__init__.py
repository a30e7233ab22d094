"""Solving a constraint system: evaluation, candidates, propagation and search.

The layer between the pass (``smalto.pipeline``, which hands it the system the rules
derived) and the constraint language it reads (``smalto.constraints``):
``evaluate`` judges a constraint under a partial assignment, ``candidates`` offers
values in JAX's preference order, ``domains`` the complete search's finite domains;
``propagation`` is the one state every search works on (with its trail);
``jax_order`` searches in JAX's order and with its fuel, ``complete`` over the
domains, ``widened`` past what JAX's rules offer; ``search`` puts them together
(``Solver``, ``decide``).
"""
