"""Small shared basics at the bottom of the import graph: they import no other part of
smalto.

``mlir`` (parse and print modules), ``inputs`` (a module from a file or stdin),
``archs`` and ``dtypes`` (how the command line spells architectures and element
types), ``codes`` (the catalogue of failure codes), ``elementwise`` (which ops are),
``records`` (the decorator of small value objects), ``percontext`` (caches that live
as long as an MLIR context), ``version``.
"""
