"""The settings of one inference: ``SolveOptions``, made once by ``smalto.infer_layout``
from its keywords and handed down, whole, to the pass, the solver and the rescues.

Each setting is declared once, here: a field, with its ``Setting`` (its help, its
command-line flag, its ``SMALTO_JAX_*`` variable), and its keyword in
``SolveKeywords``. From them are made the command line's flags
(``smalto.cli.arguments.add_option_flags``), the environment's reader
(``smalto.jax``), the keywords ``smalto.infer_layout`` and the route of
``smalto.jax`` take, and the tests' stand-in for ``infer_layout``. A new setting is a
field here and the one place that reads it: whatever lies between passes the
options on without naming their fields (``tests/codebase/test_settings.py`` holds
every field reachable from the command line, the environment and the keywords).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, field, fields
from typing import Any, TypedDict, cast

from smalto.basics.records import value_class

# Ample for every kernel we know: the search needs a few dozen attempts at most
# where JAX's pass may need thousands.
DEFAULT_FUEL = 100_000
HOPPER = (9, 0)


@value_class(frozen=True, slots=True)
class Setting:
    """How a setting is set from outside smalto.

    ``help``: what it does, as the command line says it (``{then}``, where present: what
    the command does with a changed module). ``flag``: the command line's flag; for a
    switch, the flag that turns it from its default (``--no-rewrite``). ``environment``:
    the variable that sets it for every call where ``smalto.jax`` is installed from the
    environment (``SMALTO_JAX=1``). ``per_call``: each call gives it (JAX's call gives the
    fuel and the arch): no option of ``smalto.jax``'s route nor of the environment, and
    each command spells its own flag (its default differs: the module's arch).
    """

    help: str
    flag: str
    environment: str | None = None
    per_call: bool = False


def _setting(default: Any, **how: Any) -> Any:
    return field(default=default, metadata={"setting": Setting(**how)})


@value_class(frozen=True, slots=True)
class SolveOptions:
    """How to infer one module.

    ``fuel``: the attempts the search may make (as JAX's pass counts its own).
    ``arch``: the GPU architecture, (major, minor). ``rewrite``: where the
    module as written has no layouts, try the unit-dim rewrite
    (``smalto.rescue.unit_dims``). ``stage_through_smem``: then route the
    transfers with no optimized plan through SMEM (``smalto.rescue.staging``).
    ``allow_unoptimized``: then make the fewest transfers unoptimized
    (``smalto.rescue.unoptimized``).
    """

    fuel: int = _setting(
        DEFAULT_FUEL,
        flag="--fuel",
        help="bound on the solver's search steps (default: smalto.DEFAULT_FUEL)",
        per_call=True,
    )
    arch: tuple[int, int] = _setting(
        HOPPER,
        flag="--arch",
        help="target architecture, 9.0 (Hopper) or 10.0 (Blackwell)",
        per_call=True,
    )
    rewrite: bool = _setting(
        True,
        flag="--no-rewrite",
        environment="SMALTO_JAX_REWRITE",
        help="where a module as written has no layouts, do not try the unit-dim rewrite "
        "(computing keepdims values without their unit dims); by default smalto tries it, "
        "{then}",
    )
    allow_unoptimized: bool = _setting(
        False,
        flag="--allow-unoptimized",
        environment="SMALTO_JAX_ALLOW_UNOPTIMIZED",
        help="where a module has no layouts that lower because an optimized transfer has no "
        "plan in any layout (a 16-bit WGMMA or TMEM value stored straight to GMEM, a column "
        "of a GMEM table), make the fewest such transfers unoptimized (optimized = false: "
        "uncoalesced or bank-conflicted, so slower) and warn for each; off by default, as "
        "in Pallas",
    )
    stage_through_smem: bool = _setting(
        False,
        flag="--stage-through-smem",
        environment="SMALTO_JAX_STAGE_THROUGH_SMEM",
        help="where a module has no layouts that lower because an optimized transfer has no "
        "plan in any layout, route those transfers through a new SMEM buffer (a store in "
        "the producer's layout, a load back in one that coalesces: every transfer stays "
        "optimized, the kernel's SMEM grows) and warn for each; tried before "
        "--allow-unoptimized; off by default, as in Pallas",
    )

    def __post_init__(self) -> None:
        # A caller may pass the pair as a list: a tuple from here on (a key, compared).
        if type(self.arch) is not tuple:
            object.__setattr__(self, "arch", cast(tuple[int, int], tuple(self.arch)))

    @classmethod
    def of(cls, keywords: Mapping[str, Any], caller: str) -> SolveOptions:
        """The options keywords of ``caller`` (``infer_layout``) name; a name that is no
        setting raises ``TypeError`` as Python does for the caller's own signature."""
        for name in keywords:
            if name not in _NAMES:
                raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
        return cls(**keywords)

    def keywords(self) -> SolveKeywords:
        """The options as keywords of ``smalto.infer_layout``."""
        return cast(SolveKeywords, {name: getattr(self, name) for name in _NAMES})


class SolveKeywords(TypedDict, total=False):
    """``SolveOptions``' fields as keywords (``smalto.infer_layout(module, **keywords)``):
    the same names and types (``tests/codebase/test_settings.py`` holds them so)."""

    fuel: int
    arch: tuple[int, int]
    rewrite: bool
    allow_unoptimized: bool
    stage_through_smem: bool


def settings() -> tuple[tuple[Field[Any], Setting], ...]:
    """Every field of ``SolveOptions`` with its ``Setting``, in their order."""
    return _SETTINGS


def switches() -> tuple[tuple[Field[Any], Setting], ...]:
    """The settings that are not per call: the route's options, the environment's."""
    return tuple((f, s) for f, s in _SETTINGS if not s.per_call)


_SETTINGS: tuple[tuple[Field[Any], Setting], ...] = tuple(
    (f, f.metadata["setting"]) for f in fields(SolveOptions)
)
_NAMES = tuple(f.name for f, _ in _SETTINGS)
