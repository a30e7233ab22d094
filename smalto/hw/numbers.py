"""Small integer facts shared by the solver's rules and the checker."""

from __future__ import annotations


def prime_factors(n: int) -> list[int]:
    """The prime factors of ``n``, with multiplicity, smallest first."""
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    return factors
