"""The command line: ``smalto infer | explain | check | draw | capture | fix | bench``.

A face, the top of the import graph: ``main`` (the ``smalto`` entry point) parses the
arguments (``arguments``) and hands them to one command module (``infer``,
``explain``, ``check``, ``draw``, ``capture``, ``fix``), loaded only once the command
is known so that ``--help`` loads no JAX. Every command ends the same way
(``output``: exit statuses, ``error:`` and ``note:`` lines on stderr).
"""
