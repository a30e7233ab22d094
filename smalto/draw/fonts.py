"""The fonts of the pictures: DejaVu Sans for text, DejaVu Sans Mono for cell labels.

SVG names them (``font-family``) and leaves them to the viewer. PNG needs the
font files: matplotlib ships both (found without importing it: its import
takes a second), many systems have them under ``/usr/share/fonts``, and where
neither is found Pillow's own scalable default font stands in.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from PIL import ImageFont

SANS_FAMILY = "DejaVu Sans, Bitstream Vera Sans, Verdana, sans-serif"
MONO_FAMILY = "DejaVu Sans Mono, Bitstream Vera Sans Mono, Menlo, Consolas, monospace"
_FILES = {False: "DejaVuSans.ttf", True: "DejaVuSansMono.ttf"}
_SYSTEM_DIRECTORIES = (
    "/usr/share/fonts/truetype/dejavu",
    "/usr/share/fonts/dejavu",
    "/usr/share/fonts/TTF",
    "/usr/local/share/fonts",
    "/Library/Fonts",
)


def _directories() -> list[Path]:
    found = []
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            found.append(Path(location) / "mpl-data" / "fonts" / "ttf")
    found.extend(Path(d) for d in _SYSTEM_DIRECTORIES)
    return found


@functools.cache
def font_file(mono: bool) -> Path | None:
    """The DejaVu font file, or None where there is none."""
    for directory in _directories():
        path = directory / _FILES[mono]
        if path.is_file():
            return path
    return None


@functools.cache
def font(px: float, mono: bool) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """The font at an em size of ``px`` pixels."""
    path = font_file(mono)
    size = max(1, round(px))
    if path is None:
        return ImageFont.load_default(size)
    return ImageFont.truetype(str(path), size, layout_engine=ImageFont.Layout.BASIC)
