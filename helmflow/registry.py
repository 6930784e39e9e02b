"""Registries by decorator, and plugin loading (entry points and ``--plugin`` files or modules)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Generic, TypeVar

from helmflow.errors import HelmflowError
from helmflow.settings import plugin_specs

T = TypeVar("T")


class UnknownNameError(HelmflowError, KeyError):
    """A name that no registry entry answers to; the message lists what exists."""

    def __str__(self) -> str:  # KeyError quotes its argument; this one is a sentence
        return str(self.args[0])


class Registry(Generic[T]):
    """Names to entries. ``modules``: built-in names and the module that registers each, imported when
    the name is first looked up (a board that runs one scenario imports that scenario's module, not
    every one); :meth:`names` lists them all the same."""

    def __init__(self, kind: str, modules: dict[str, str] | None = None):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._modules: dict[str, str] = dict(modules or {})

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        existing = self._items.get(name)
        if existing is not None and existing is not obj and _qualname(existing) != _qualname(obj):
            raise HelmflowError(f"{self.kind} {name!r} is registered twice ({_qualname(existing)}, {_qualname(obj)})")
        self._items[name] = obj

    def put(self, name: str, obj: T) -> None:
        """Register or replace: for entries a user's configuration defines at run time (a configured
        benchmark's jury), which a changed file redefines under the same name."""
        self._items[name] = obj

    def get(self, name: str) -> T:
        load_plugins()
        if name not in self._items and name in self._modules:
            self._import(self._modules[name])
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or '(none)'}"
            ) from None

    def names(self) -> list[str]:
        load_plugins()
        return sorted(self._items.keys() | self._modules.keys())

    def __contains__(self, name: str) -> bool:
        load_plugins()
        return name in self._items or name in self._modules

    def load_all(self) -> None:
        """Import every built-in module now (what registers each name: tests compare it with ``modules``)."""
        for module in dict.fromkeys(self._modules.values()):
            self._import(module)

    def _import(self, module: str) -> None:
        loaded = sys.modules.get(module)
        if loaded is not None:  # imported while the entries were replaced (a test's copy): register again
            if not getattr(loaded.__spec__, "_initializing", False):
                importlib.reload(loaded)
        else:
            importlib.import_module(module)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


_ENTRY_POINT_GROUPS = ("helmflow.scenarios", "helmflow.metrics", "helmflow.clients")
_loaded: set[str] = set()
_extra_plugins: list[str] = []


def add_plugins(specs: list[str]) -> None:
    """Plugins named on the command line: a module name or a ``.py`` file path."""
    _extra_plugins.extend(s for s in specs if s)


def load_plugins() -> None:
    """Import built-ins, entry points, $HELMFLOW_PLUGINS and --plugin specs, once each."""
    _import_once("builtins", _import_builtins)
    for group in _ENTRY_POINT_GROUPS:
        _import_once(f"ep:{group}", partial(_load_entry_points, group))
    env = plugin_specs()
    for spec in env + _extra_plugins:
        _import_once(f"plugin:{spec}", partial(import_plugin, spec))


def _import_once(key: str, fn: Callable[[], None]) -> None:
    if key in _loaded:
        return
    _loaded.add(key)
    fn()


def _import_builtins() -> None:
    for mod in ("helmflow.scenarios", "helmflow.metrics", "helmflow.clients", "helmflow.adapters"):
        importlib.import_module(mod)


def _load_entry_points(group: str) -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=group):
        ep.load()


def import_plugin(spec: str) -> None:
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise HelmflowError(f"plugin file {spec} does not exist")
        name = f"helmflow_plugin_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        assert module_spec and module_spec.loader
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            importlib.import_module(spec)
        except ModuleNotFoundError as exc:
            if exc.name and spec.startswith(exc.name):  # the plugin itself, not something it imports
                raise HelmflowError(f"plugin module {spec!r} cannot be imported: {exc}") from None
            raise
