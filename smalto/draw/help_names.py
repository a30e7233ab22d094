"""Layout names and targets ``smalto draw`` accepts, listed without importing JAX (for
``--help``).

``REGISTER_LAYOUT_NAMES`` are smalto's names of JAX's named tiled register layouts
(``smalto.hw.names.REGISTER_LAYOUTS``, the names its messages print); the tests
check the two lists are one.
"""

REGISTER_LAYOUT_NAMES = (
    "WGMMA", "WGMMA_TRANSPOSED", "WGMMA_ROW", "WGMMA_COL", "WGMMA_8BIT", "WGMMA_ACC_32BIT",
    "WGMMA_UPCAST_2X", "WGMMA_UPCAST_4X", "TCGEN05", "TCGEN05_TRANSPOSED", "TCGEN05_ROW",
    "TCGEN05_COL", "TMEM_NATIVE", "TMA_INDICES", "TMA_INDICES_4",
)  # fmt: skip
TMEM_LAYOUT_NAMES = ("default", "half_lane", "m64_collective")
ARCHS = {"9.0": (9, 0), "10.0": (10, 0)}  # --arch: the targets smalto knows
