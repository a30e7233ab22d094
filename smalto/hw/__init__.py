"""Hardware facts: the only place that speaks JAX's layout types."""
