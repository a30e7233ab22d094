"""Settings declared once (issue #51): each field of ``SolveOptions`` carries its flag, its
environment variable and its help (``Setting``), and every way of setting it is made from
that declaration. A new setting is then its field and the code that reads it: these tests
reach every field from the command line, the environment, ``infer_layout``'s keywords and
the route of ``smalto.jax``, whatever the fields are."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, get_type_hints

import pytest

import smalto
import smalto.infer
import smalto.jax
from smalto.basics.mlir import make_context
from smalto.cli.arguments import command_parser, solve_options
from smalto.jax.hooks import check_options, current_route
from smalto.solve import options as declared
from smalto.solve.options import SolveKeywords, SolveOptions, settings, switches

DEFAULTS = SolveOptions()
# A value other than the default for each type a setting has, as the command line and
# the environment spell it.
_OTHER: dict[object, tuple[list[str], Any]] = {
    int: (["17"], 17),
    tuple[int, int]: (["10.0"], (10, 0)),
}
SETTINGS = [field.name for field, _ in settings()]
SWITCHES = [field.name for field, _ in switches()]


def _module() -> Any:
    return smalto.infer.ir.Module.parse("module {}", make_context())


def _declared(name: str) -> tuple[dataclasses.Field[Any], declared.Setting]:
    return next((f, s) for f, s in settings() if f.name == name)


def _other(name: str) -> tuple[list[str], Any]:
    """The command line's words after the flag, and the value they give, for a value of
    ``name`` that is not its default."""
    field, _ = _declared(name)
    kind = get_type_hints(SolveOptions)[name]
    if kind is bool:
        return [], not field.default
    return _OTHER[kind]


def test_every_field_is_declared_with_a_flag_and_help() -> None:
    assert [f.name for f in dataclasses.fields(SolveOptions)] == SETTINGS
    flags = [setting.flag for _, setting in settings()]
    assert len(set(flags)) == len(flags) and all(flag.startswith("--") for flag in flags)
    assert all(setting.help for _, setting in settings())
    variables = [setting.environment for _, setting in switches()]
    assert all(v is not None and v.startswith("SMALTO_JAX_") for v in variables)
    assert len(set(variables)) == len(variables)
    # Per call: what JAX's own call gives.
    assert {f.name for f, s in settings() if s.per_call} == {"fuel", "arch"}


def test_the_keywords_are_the_fields() -> None:
    assert get_type_hints(SolveKeywords) == get_type_hints(SolveOptions)
    assert SolveKeywords.__total__ is False


@pytest.mark.parametrize("name", SETTINGS)
def test_every_setting_is_reached_from_the_command_line(name: str) -> None:
    _, setting = _declared(name)
    words, value = _other(name)
    for command in ("infer", "explain"):
        args = command_parser(command).parse_args(["k.mlir", setting.flag, *words])
        options = solve_options(args, fuel=args.fuel, arch=args.arch or DEFAULTS.arch)
        assert options == dataclasses.replace(DEFAULTS, **{name: value}), command
        # And nothing set by default: the defaults are SolveOptions' own.
        args = command_parser(command).parse_args(["k.mlir"])
        assert solve_options(args, fuel=args.fuel, arch=DEFAULTS.arch) == DEFAULTS


@pytest.mark.parametrize("name", SWITCHES)
def test_every_switch_is_a_flag_of_python_m_smalto_jax_run(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from smalto.cli.capture import run_main

    installed: dict[str, object] = {}
    monkeypatch.setattr(smalto.jax, "install", lambda **keywords: installed.update(keywords))
    script = tmp_path / "nothing.py"
    script.write_text("")
    assert run_main([_declared(name)[1].flag, str(script)]) == 0
    assert installed == {"dump_to": None, name: _other(name)[1]}


@pytest.mark.parametrize("name", SWITCHES)
def test_every_switch_is_read_from_the_environment(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    variable = _declared(name)[1].environment
    assert variable is not None
    value = _other(name)[1]
    monkeypatch.setenv(variable, "1" if value else "off")
    assert smalto.jax.environment_options() == {name: value}
    monkeypatch.setenv(variable, "")
    assert smalto.jax.environment_options() == {}
    monkeypatch.setenv(variable, "maybe")
    with pytest.raises(ValueError, match=f"{variable}='maybe': expected 1, true, yes, on"):
        smalto.jax.environment_options()


@pytest.mark.parametrize("junk", [("SMALTO_JAX", "2"), ("SMALTO_JAX_STAGE_THROUGH_SMEM", "maybe")])
def test_a_junk_value_is_refused_naming_the_variable(
    junk: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(*junk)
    with pytest.raises(ValueError) as refused:
        smalto.jax._install_from_environment()
    assert str(refused.value) == (
        f"{junk[0]}={junk[1]!r}: expected 1, true, yes, on (on) or 0, false, no, off "
        "(off; unset or empty: off)"
    )
    assert not smalto.jax.is_installed()


@pytest.mark.parametrize("name", SETTINGS)
def test_every_setting_is_a_keyword_of_infer_layout(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reached: list[SolveOptions] = []

    def solve_with(module: object, options: SolveOptions, dump_to: object = None) -> Any:
        reached.append(options)
        raise LookupError  # (no inference: only what reached it)

    monkeypatch.setattr(smalto.infer, "solve_with", solve_with)
    value = _other(name)[1]
    with pytest.raises(LookupError):
        smalto.infer_layout(_module(), **{name: value})
    with pytest.raises(LookupError):
        smalto.infer.solve_module(_module(), **{name: value})
    assert reached[0] == dataclasses.replace(DEFAULTS, **{name: value})
    assert getattr(reached[1], name) == value
    with pytest.raises(TypeError, match="infer_layout\\(\\) got an unexpected keyword"):
        smalto.infer_layout(_module(), **{f"{name}_": value})


@pytest.mark.parametrize("name", SWITCHES)
def test_every_switch_is_an_option_of_the_route(name: str) -> None:
    value = _other(name)[1]
    check_options({name: value})
    with smalto.jax.enabled(**{name: value}):
        assert dict(current_route().options) == {name: value}


@pytest.mark.parametrize("name", sorted(set(SETTINGS) - set(SWITCHES)))
def test_what_each_call_gives_is_no_option_of_the_route(name: str) -> None:
    with pytest.raises(TypeError, match="takes no option"):
        check_options({name: _other(name)[1]})
