"""The constraint language and the facts of a failure.

``language``: variables (sets of value sites with one layout), expressions, the few
kinds of constraints, the ``System`` the rules derive and the solver decides.
``conflict_report``: requirements that cannot hold together, each with the op that
imposed it (``InferenceError.conflict``), so that a rule that meets a layout its
value cannot take can report it without the diagnosis.
"""
