"""Solving a constraint system: evaluation, candidates, propagation and search.

The layer between the pass (``smalto.pipeline``, which hands it the system the rules
derived) and the constraint language it reads (``smalto.constraints``). Two parts:

- what tracks JAX's search, function for function: ``jax_search``
  (``find_assignments_for``, ``conjure_assignment``), with ``candidates`` (the
  values each constraint offers, in JAX's preference order) and the speed
  machinery behind a small interface (``candidate_scan``);
- smalto's own: ``search`` (``decide``: the declared sequence of strategies,
  with one typed outcome, ``decision``), ``complete`` (the complete search over
  ``domains``), ``widened`` (what the widened search widens), and
  ``for_diagnosis`` (the searches a diagnosis runs, under the caller's options).

Under both: ``evaluate`` judges a constraint under a partial assignment,
``propagation`` is the one state every search works on (with its trail),
``fuel`` its fuel's accounting; ``options`` holds the settings of one
inference (``SolveOptions``).
"""
