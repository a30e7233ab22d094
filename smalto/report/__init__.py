"""What inference chose and why, for people: the faces below the command line.

``summary`` (``infer --summary``), ``layouts_page`` (``infer --report`` on a kernel
that has layouts) and ``failure_page`` (on one that has none), ``failure_json``
(``infer --json`` of a failure), ``reasons`` (why a value got its layout:
``smalto explain``), ``conflict_layouts`` (the layouts each side of a conflict
wants, for pictures), and ``printed`` (names and lines of values as the module
``smalto infer`` prints them).
"""
