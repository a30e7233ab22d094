"""A kernel's shared memory: every allocation JAX's lowering makes (``allocations``), in
program order (``program_order``), and the verified changes that shrink it (``cuts``)."""
