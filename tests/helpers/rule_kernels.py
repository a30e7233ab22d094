"""Minimal kernels per op with a rule, each pinning the op to one layout (``rule_agreement``).

``GENERATORS`` maps every op name smalto has a rule for to a function that
derives, for that op, kernels in each layout its rule may take (and a few it
may not), at a size where the layouts fit: ops on registers in
``rule_kernels_registers``, ops on memory refs in ``rule_kernels_memory``,
what they share in ``rule_kernel_parts``.
"""

from __future__ import annotations

# Each family registers its generators on import.
import rule_kernels_memory  # noqa: F401
import rule_kernels_registers  # noqa: F401
from rule_kernel_parts import GENERATORS

__all__ = ["GENERATORS"]
