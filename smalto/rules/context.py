"""What a rule sees and says: the registry of rules by op name, and ``RuleContext``.

A rule is a function ``rule(ctx, op)`` registered under the op's name (the
``rule`` decorator). Through the context it creates variables for the op's
sites (or joins them to their producer's, for memory refs), states
constraints, and fixes the layouts the op imposes. A rule never solves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, cast, overload

from jax._src.lib.mlir import ir

from smalto.basics import percontext
from smalto.constraints.language import (
    Constraint,
    Fixed,
    LayoutKind,
    NotOfKind,
    Role,
    Site,
    System,
    Var,
    Variable,
)
from smalto.errors import FAILURE_PREFIX, MODULE_CHANGED, InferenceError
from smalto.hw import layouts as hl
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.program.view import Op, Program, Value
from smalto.rules.attributes import ints
from smalto.rules.divisibility import Divisibility
from smalto.source.locations import op_text
from smalto.source.tracebacks import with_op_traceback

Rule = Callable[["RuleContext", Op], None]
_OPERAND, _RESULT, _ARGUMENT = Role.OPERAND, Role.RESULT, Role.ARGUMENT
RULES: dict[str, Rule] = {}

# Terminators belong to the op that owns their region: its rule handles them.
TERMINATORS = frozenset({"scf.yield", "scf.condition"})
# Ops whose block arguments are SMEM buffers JAX 0.12.0.1 neither infers (its
# pass fails with a KeyError) nor lowers (no lowering rule for the op).
UNSUPPORTED_BUFFER_OWNERS = frozenset({"mosaic_gpu.run_scoped"})


def rule[R: Rule](*names: str) -> Callable[[R], R]:
    def register(fn: R) -> R:
        for name in names:
            RULES[name] = fn
        return fn

    return register


class RuleContext:
    """What a rule sees: the program, the target, and the system being built."""

    def __init__(self, program: Program, arch: tuple[int, int]) -> None:
        self.program = program
        self.arch = arch
        self.system = System()
        # slice_smem / slice_tmem results with the same alias_id are one ref.
        self.aliases: dict[tuple[str, int], int] = {}
        self.divisibility = Divisibility(program)
        # Decoded layout and transform attributes: kernels repeat a few, and
        # decoding one through JAX costs far more than a dictionary lookup.
        # Attributes are unique in their context: keyed by hash, kept with it.
        self._layouts: dict[tuple[int, bool], Const] = percontext.cache(
            program.context, "decoded layouts"
        )
        self._transforms: dict[int, Smem] = percontext.cache(program.context, "decoded transforms")
        self._ints: dict[int, tuple[int, ...]] = percontext.cache(program.context, "integer arrays")
        self._int_values: dict[int, int] = percontext.cache(program.context, "integers")
        self._splat_constants: dict[int, bool] = percontext.cache(
            program.context, "splat constants"
        )
        # Splat layouts by shape: kernels repeat a few shapes, and making one
        # runs JAX's code, seldom warm by the time a rule asks again.
        self._splats: dict[tuple[int, ...], Reg] = percontext.cache(
            program.context, "splat layouts"
        )
        self._segment_sizes: dict[int, tuple[int, ...]] = {}
        # The ops made so far, by id (None: not yet): a list index, where
        # ``program.ops[i]`` is a method call.
        self._made = program.ops.made

    # --- sites -----------------------------------------------------------------

    @staticmethod
    def operand(op: Op, index: int) -> Site:
        return Site(op.id, _OPERAND, index)

    @staticmethod
    def result(op: Op, index: int) -> Site:
        return Site(op.id, _RESULT, index)

    @staticmethod
    def argument(op: Op, region: int, index: int) -> Site:
        return Site(op.id, _ARGUMENT, index, region)

    def value_id(self, site: Site) -> int:
        return self._value_id(site)

    def value(self, site: Site) -> Value:
        return self.program.values[self.value_id(site)]

    # --- attributes --------------------------------------------------------------

    def ints(self, attr: ir.Attribute) -> tuple[int, ...]:
        """The integers of an array attribute (``attributes.ints``), read once per context.

        Attributes are unique in their context: the hash names one, and a
        dictionary hit spares a binding call per element.
        """
        key = hash(attr)
        found = self._ints.get(key)
        if found is None:
            found = self._ints[key] = ints(attr)
        return found

    def int_value(self, attr: ir.Attribute) -> int:
        """The value of an integer attribute, read once per context (as ``ints``)."""
        key = hash(attr)
        found = self._int_values.get(key)
        if found is None:
            found = self._int_values[key] = ir.IntegerAttr(attr).value
        return found

    def is_splat_constant(self, attr: ir.Attribute) -> bool:
        """Whether a constant's value attribute is a dense splat, read once per context.

        The hash names the attribute without reading its storage, which,
        touched once per constant, is seldom in the cache.
        """
        key = hash(attr)
        found = self._splat_constants.get(key)
        if found is None:
            found = self._splat_constants[key] = (
                isinstance(attr, ir.DenseElementsAttr) and ir.DenseElementsAttr(attr).is_splat
            )
        return found

    def splat(self, shape: tuple[int, ...]) -> Reg:
        """The splat layout of a shape (``hl.splat``), made once per context."""
        found = self._splats.get(shape)
        if found is None:
            found = self._splats[shape] = hl.splat(shape)
        return found

    def segment(self, op: Op, index: int) -> range:
        """The operand positions of segment ``index`` of an op with optional or variadic
        operands: an absent optional operand (a size-0 segment) shifts every later one."""
        sizes = self._segment_sizes.get(op.id)
        if sizes is None:
            # Rules ask for several segments of one op: its sizes are read once.
            sizes = self._segment_sizes[op.id] = self.ints(
                op.operation.attributes["operandSegmentSizes"]
            )
        start = sum(sizes[:index])
        return range(start, start + sizes[index])

    # --- variables ---------------------------------------------------------------

    def new_var(self, *sites: Site, key: Site | None = None) -> int:
        """A variable for ``sites``; ``key`` (default: the first) gives its type."""
        if key is None:
            if len(sites) == 1:
                # Most variables start with one site: no type to compare it with.
                site = sites[0]
                return self._var_of_value(site, self.program.values[self._value_id(site)])
            key = sites[0]
        value_id = self._value_id(key)
        value = self.program.values[value_id]
        variables = self.system.variables
        var = len(variables)
        variables.append(
            Variable(var, value.kind, value.shape, value.bitwidth, value.strides, key, value_id)
        )
        self.add_sites(var, *sites)
        return var

    def _var_of_value(self, site: Site, value: Value) -> int:
        """A new variable whose one site is ``site``, the site of ``value``."""
        variables, var_of_site = self.system.variables, self.system.var_of_site
        var = len(variables)
        variables.append(
            Variable(
                var, value.kind, value.shape, value.bitwidth, value.strides, site, value.id, [site]
            )
        )
        known = len(var_of_site)
        if var_of_site.setdefault(site, var) != var or len(var_of_site) == known:
            raise AssertionError(f"site {site} is in two variables")
        return var

    def _value_id(self, site: Site) -> int:
        # value_at, with the ops made already looked up in a plain list.
        op_id, role, index, region = site
        op = self._made[op_id] or self.program.ops[op_id]
        if role is _OPERAND:
            return op.operands[index]
        if role is _RESULT:
            return op.results[index]
        # A block argument's site names its region.
        return op.regions[cast(int, region)][0][0][index]

    def add_sites(self, var: int, *sites: Site) -> None:
        variable = self.system.variables[var]
        program = self.program
        ops, made, values = program.ops, self._made, program.values
        var_of_site = self.system.var_of_site
        kind, shape, site_list = variable.kind, variable.shape, variable.sites
        for site in sites:
            # value_at, inline: this runs for every site of every variable.
            op_id, role, index, region = site
            op = made[op_id] or ops[op_id]
            if role is _OPERAND:
                value = values[op.operands[index]]
            elif role is _RESULT:
                value = values[op.results[index]]
            else:
                # A block argument's site names its region.
                value = values[op.regions[cast(int, region)][0][0][index]]
            if value.kind is not kind or (value.shape is not shape and value.shape != shape):
                self._mismatch(variable, site, value)
            # One hash of the site where `in` and then a store would take two.
            known = len(var_of_site)
            if var_of_site.setdefault(site, var) != var or len(var_of_site) == known:
                raise AssertionError(f"site {site} is in two variables")
            site_list.append(site)

    def _mismatch(self, variable: Variable, site: Site, value: Value) -> None:
        # JAX's phrase first: code written against its pass matches on it.
        what = "Memory space" if value.kind != variable.kind else "Shape"
        a, b = (
            (variable.kind.name, value.kind.name)
            if value.kind != variable.kind
            else (variable.shape, value.shape)
        )
        raise InferenceError(
            f"{what} mismatch between variable and {self.describe(site)}: {a} != {b}. "
            f"It has type {value.type}, which does not match the {variable.kind.name} "
            f"value of shape {variable.shape} it must share a layout with"
        )

    def ref(self, op: Op, operand_index: int) -> int:
        """The variable of the ref an op's operand refers to (shared with its producer)."""
        value = self.program.values[op.operands[operand_index]]
        origin = value.producer
        if origin is None:
            return self._var_of_value(Site(op.id, _OPERAND, operand_index), value)
        # A plain tuple finds the Site it equals: no Site is made for a ref
        # whose producer has a variable already (most refs).
        region = origin.region
        key: tuple[int, Role, int, int | None]
        if region is None:
            key = (origin.op, _RESULT, origin.index, None)
        else:
            key = (origin.op, _ARGUMENT, origin.index, region)
        # A Site is the tuple it equals (hashed and compared as one).
        var = cast("dict[tuple[int, Role, int, int | None], int]", self.system.var_of_site).get(key)
        if var is not None:
            return var
        producer = Site(*key)
        owner = self.program.ops[producer.op]
        if producer.role is _ARGUMENT and owner.name in UNSUPPORTED_BUFFER_OWNERS:
            from smalto.basics.version import JAX_PINNED  # (words: only where it raises)

            raise NotImplementedError(
                f"No layout inference rule defined for the SMEM buffers of {owner.name} "
                f"(used by {self.describe_op(op)}; its buffer is allocated at "
                f"{owner.where}): JAX {JAX_PINNED}'s pass fails on them too, and its lowering "
                f"has no rule for {owner.name}; allocate the buffer with the kernel's "
                "scratch shapes instead"
            )
        # A ref from an op that has no layout (a function argument, an op
        # outside what we infer): it gets its own, free variable.
        return self._var_of_value(producer, value)

    def aliased_var(self, table: str, op: Op, site: Site) -> int:
        """A slice result's variable: shared with earlier slices of the same alias id.

        The alias id alone names the ref (not the offset): slices that say they
        alias are one ref, and must agree on its shape.
        """
        attributes = op.operation.attributes
        alias = attributes["alias_id"] if "alias_id" in attributes else None
        if alias is None:
            return self.new_var(site)
        key = (table, self.int_value(alias))
        var = self.aliases.get(key)
        if var is None:
            var = self.new_var(site)
            self.aliases[key] = var
        else:
            self.add_sites(var, site)
        return var

    # --- constraints ---------------------------------------------------------------

    def require(self, *constraints: Constraint) -> None:
        self.system.constraints.extend(constraints)

    def fix(
        self,
        var: int,
        value: Const,
        op: Op,
        what: str,
        jax_text: Callable[[], str] | None = None,
        *,
        check: bool = True,
    ) -> None:
        """Fixes a variable's layout; ``what`` names the operand for the error message.

        ``jax_text`` makes JAX's own message for a value that does not fit, put
        first in ours where its pass has one (made when the message is read:
        JAX's may print the op). ``check=False`` leaves the
        value's fit to the solver, which tests every assignment (an unfit one
        is then a conflict, not an error at once).
        """
        shape = self.system.variables[var].shape
        fixed = Fixed(var, value, op.id, what)
        if check and not hl.fits(value, shape):
            # (The words' modules, where a value does not fit: a kernel that infers never
            # loads them.)
            from smalto.hw.jax_text import does_not_fit
            from smalto.hw.names import describe_value_whole

            def text() -> str:
                return (
                    f"{self.describe_op(op)} requires {what} to be "
                    f"{describe_value_whole(value)}, which does not fit its shape {shape}"
                )

            def phrase() -> str:
                # (JAX's words may print the op: only from the module as it was read.)
                if jax_text is not None and self.program.unchanged():
                    jax_words = jax_text()
                else:
                    jax_words = does_not_fit(op.name, what, value, shape)
                return f"{FAILURE_PREFIX}: {jax_words}"

            raise self.unfit(fixed, op, text, phrase)
        self.system.fixed.append(fixed)

    def unfit(
        self,
        fixed: Fixed,
        op: Op,
        text: str | Callable[[], str],
        phrase: str | Callable[[], str] | None = None,
    ) -> InferenceError:
        """The error for a value an op imposes that cannot fit: that op alone is the conflict.

        ``phrase`` is JAX's message for it (or what makes it when read), put
        first; the traceback ends at
        the op's source line. Where JAX's phrase says it, smalto's words
        (``text``, which may be a function that makes them) and the conflict
        are made when the message is first read (``InferenceError``'s
        ``diagnose``): raising costs no more than JAX's pass, whose refusal
        this is. Without a phrase, a ``text`` already made is the message at
        once, and only the conflict waits.
        """

        program = self.program
        shape = self.system.variables[fixed.var].shape

        def words() -> tuple[str, object]:
            # (Imported when a refusal is worded: a kernel that infers never loads it.)
            from smalto.constraints.conflict_report import ConflictReport, Requirement
            from smalto.hw.names import describe_value_whole

            if not program.unchanged():
                # (Its ops may be gone: said without reading them.)
                return (
                    f"`{op.name}` requires {fixed.what} to be "
                    f"{describe_value_whole(fixed.value)}, which does not fit its shape "
                    f"{shape} ({MODULE_CHANGED})",
                    None,
                )
            reason = text if isinstance(text, str) else text()
            report = ConflictReport(
                [Requirement(op.name, op.where, reason, fixed)], [], [], None, minimal=True
            )
            return reason, report

        if phrase is None and isinstance(text, str):
            # The message is the rule's sentence, at once (JAX's copy of it as the error
            # unwinds through a traced op says it all); the conflict is made when read.
            error = InferenceError(text, diagnose=words)
        elif phrase is None:
            reason, report = words()
            error = InferenceError(reason, conflict=report)
        else:
            error = InferenceError(phrase=phrase, diagnose=words)
        # ``with_op_traceback`` hands back the error it is given.
        return cast(InferenceError, with_op_traceback(error, op.operation, op.name))

    @overload
    def decode(self, op: Op, attr: ir.Attribute, tmem: Literal[False] = False) -> Reg: ...
    @overload
    def decode(self, op: Op, attr: ir.Attribute, tmem: Literal[True]) -> Tmem: ...
    def decode(self, op: Op, attr: ir.Attribute, tmem: bool = False) -> Const:
        """A layout attribute of the op as a value; a malformed one is the user's error."""
        key = (hash(attr), tmem)
        value = self._layouts.get(key)
        if value is not None:
            return value
        from smalto.hw import encode

        try:
            if tmem:
                value = Tmem(encode.decode_tmem_layout(attr))
            else:
                value = Reg(encode.decode_layout(attr))
        except (ValueError, NotImplementedError) as e:
            raise InferenceError(
                f"{self.describe_op(op)} has an invalid layout {attr}: {e}"
            ) from None
        self._layouts[key] = value
        return value

    def decode_transforms(self, attr: ir.Attribute) -> Smem:
        """The SMEM value of a transforms attribute (see ``encode.decode_transforms``)."""
        key = hash(attr)
        decoded = self._transforms.get(key)
        if decoded is None:
            from smalto.hw import encode

            decoded = encode.decode_transforms(ir.ArrayAttr(attr))
            self._transforms[key] = decoded
        return decoded

    def not_of_kind(self, var: int, op: Op, *kinds: LayoutKind) -> None:
        for kind in kinds:
            self.require(NotOfKind(Var(var), kind, op.id))

    # --- messages --------------------------------------------------------------------

    def describe_op(self, op: Op) -> str:
        return op_text(op)

    def describe(self, site: Site) -> str:
        op = self.program.ops[site.op]
        role = {Role.OPERAND: "operand", Role.RESULT: "result", Role.ARGUMENT: "argument"}
        return f"{role[site.role]} #{site.index} of {self.describe_op(op)}"
