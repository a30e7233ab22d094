"""The program view: a compact, binding-free picture of a Mosaic GPU module.

``view`` (ops, values and blocks by integer id; what the rules, the solver and the
checker read), ``reader`` (the one walk over the module that fills it) and
``type_facts`` (what a vector or memref type tells). Below the rules, the solver and
the checker, beside the hardware facts (``smalto.hw``).
"""
