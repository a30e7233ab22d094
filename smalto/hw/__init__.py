"""Hardware facts: the only place that speaks JAX's layout types.

On the ground, beside the program view: the rules, the solver, the checker, the
diagnosis and the pictures all ask here what a layout is and what the hardware
allows, and none of them builds a JAX layout object itself. ``values`` (the values
a variable takes: register, SMEM, TMEM layouts), ``layouts`` (validity for a shape,
the relayouts JAX's lowering can do), ``transfers`` (which GMEM/SMEM transfers have
a plan), ``strides`` and ``numbers`` (small arithmetic of shapes and strides),
``encode`` (attributes as JAX encodes them), ``names`` (layouts named as smalto
prints them) and ``jax_text`` (JAX's own wording of layouts, for its phrases).
Which facts the checker shares from here and which it restates:
``docs/rules_and_checks.md``.
"""
