"""Solving a constraint system: evaluation, candidates, propagation and search."""
