"""Layouts a kernel file imports (``hopper_row_sum_layout_from_module.py``): a project's
shared names for the layouts of its tiles. The one for sums is the column layout, where a
sum over axis 1 has the row layout."""

from jax.experimental.pallas import mosaic_gpu as plgpu

TILE = plgpu.Layout.WGMMA
SUMS = plgpu.Layout.WGMMA.reduce(0)
