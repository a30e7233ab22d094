"""The user's kernel source: where an op came from, and edits at those lines.

``locations`` (MLIR locations in words: ``kernel.py:75:20``), ``files`` (the Python
files behind them, found and read once), ``tracebacks`` (a traceback that ends at the
kernel line), ``pallas_edits`` (a line rewritten in Pallas' own words) and
``fix_edits`` (a verified fix as spans of the source and their replacements, as any
tool can apply them), ``size_names`` (the kernel's name for a size a fix writes),
``scripts`` (a function of the user's script, loaded as ``python
SCRIPT.py`` would), ``lines`` (a file's lines as Python's tokenizer counts them). On
the ground: they import nothing of the pass.
"""
