"""Strict environment parsing: every bad value stops start-up with a message naming the variable."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, cast

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def load_env_file(path: str) -> None:
    """Read KEY=VALUE lines into os.environ without overriding what the environment already says.

    `bin/serve` writes such a file (git-ignored `.env`, with a generated SECRET_KEY) so management
    commands run later in a plain shell see the same settings as the server.
    """
    if not path or not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            os.environ.setdefault(key.strip(), value.strip().strip("'\""))


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        result = default
    else:
        try:
            result = int(value)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc
    _check_range(name, result, minimum, maximum)
    return result


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    value = _raw(name)
    if value is None or value == "":
        result = default
    else:
        try:
            result = float(value)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from exc
    _check_range(name, result, minimum, maximum)
    return result


def env_optional_float(
    name: str, *, minimum: float | None = None, maximum: float | None = None
) -> float | None:
    """None when unset or empty (the caller then uses its own default, e.g. a calibration file)."""
    value = _raw(name)
    if value is None or value == "":
        return None
    return env_float(name, 0.0, minimum=minimum, maximum=maximum)


def env_choice(name: str, default: str, choices: Iterable[str]) -> str:
    allowed = tuple(choices)
    value = env_str(name, default).lower()
    if value not in allowed:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def _check_range(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be <= {maximum}, got {value}")


# --- Declarations -----------------------------------------------------------------------------
# Each variable is declared once, as a `Setting`: its name, type, default, allowed values, one line
# of documentation and the docs table that lists it. The service's knobs are declared on the fields
# of their domain's object (memory_app/conf/), the infrastructure's in project/variables.py;
# settings.py reads both through `Setting.read`, and `manage.py settings_doc --write` writes the
# README and docs/OPERATIONS.md tables from them (tests/project/test_settings_declared.py: no drift).

README = "README.md"
OPERATIONS = "docs/OPERATIONS.md"
TABLES = (README, OPERATIONS)

_T = TypeVar("_T")


class _Unset:
    pass


_UNSET = _Unset()


@dataclass(frozen=True)
class Setting(Generic[_T]):
    """One environment variable. `kind` picks the strict parser (and so the error message)."""

    name: str
    kind: Literal["bool", "int", "float", "optional_float", "str", "choice", "list"]
    default: _T
    doc: str
    table: str = README
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    # The docs' wording of the default when the value above is not the whole story (it depends on
    # DEBUG or another variable, or None means "from the calibration file").
    default_doc: str = ""
    # Not read by settings.py but by this script or file (documented here all the same).
    read_by: str = ""

    def read(self, *, default: _T | _Unset = _UNSET) -> _T:
        """The parsed value; `default` replaces the declared one when it depends on other values."""
        fallback: Any = self.default if isinstance(default, _Unset) else default
        low, high = self.minimum, self.maximum
        value: Any
        if self.kind == "bool":
            value = env_bool(self.name, fallback)
        elif self.kind == "int":
            value = env_int(
                self.name,
                fallback,
                minimum=None if low is None else int(low),
                maximum=None if high is None else int(high),
            )
        elif self.kind == "float":
            value = env_float(self.name, fallback, minimum=low, maximum=high)
        elif self.kind == "optional_float":
            value = env_optional_float(self.name, minimum=low, maximum=high)
        elif self.kind == "choice":
            value = env_choice(self.name, fallback, self.choices)
        elif self.kind == "list":
            value = env_list(self.name, fallback)
        else:
            value = env_str(self.name, fallback)
        return cast(_T, value)


def flag(name: str, default: bool, doc: str, **extra: Any) -> Setting[bool]:
    return Setting(name, "bool", default, doc, **extra)


def integer(
    name: str, default: int, low: int | None, high: int | None, doc: str, **extra: Any
) -> Setting[int]:
    return Setting(name, "int", default, doc, minimum=low, maximum=high, **extra)


def number(
    name: str, default: float, low: float | None, high: float | None, doc: str, **extra: Any
) -> Setting[float]:
    return Setting(name, "float", default, doc, minimum=low, maximum=high, **extra)


def optional_number(name: str, low: float, high: float, doc: str, **extra: Any) -> Setting[float | None]:
    """Unset or empty is None: the caller then uses its own default (e.g. a calibration file)."""
    return Setting(name, "optional_float", None, doc, minimum=low, maximum=high, **extra)


def choice(name: str, default: str, choices: tuple[str, ...], doc: str, **extra: Any) -> Setting[str]:
    return Setting(name, "choice", default, doc, choices=choices, **extra)


def text(name: str, default: str, doc: str, **extra: Any) -> Setting[str]:
    return Setting(name, "str", default, doc, **extra)


def names(name: str, default: list[str], doc: str, **extra: Any) -> Setting[list[str]]:
    """A comma-separated list."""
    return Setting(name, "list", default, doc, **extra)
