"""Layout names ``smalto draw`` accepts, listed without importing JAX (for ``--help``).

``REGISTER_LAYOUT_NAMES`` are JAX's named tiled register layouts without the
``_LAYOUT`` suffix; the tests check the list against ``fragmented_array``.
"""

REGISTER_LAYOUT_NAMES = (
    "TCGEN05_COL", "TCGEN05", "TCGEN05_ROW", "TCGEN05_TRANSPOSED", "TMA_INDICES_4", "TMA_INDICES",
    "TMEM_NATIVE", "WGMMA_COL", "WGMMA", "WGMMA_8BIT", "WGMMA_ACC_32BIT", "WGMMA_UPCAST_2X",
    "WGMMA_UPCAST_4X", "WGMMA_ROW", "WGMMA_TRANSPOSED",
)  # fmt: skip
TMEM_LAYOUT_NAMES = ("default", "half_lane", "m64_collective")
