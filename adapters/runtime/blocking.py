"""The blocking facade: the async application service, callable from synchronous code.

Django views, Flask handlers, scripts and the CLI have no event loop. ``blocking(facade)``
gives them a view with the same methods, built once over the async facade rather than as a
second implementation: each coroutine method runs on a private event loop in a daemon
thread and the caller waits for its result. Attributes that are themselves services (the
facade's groups, a unit of work and its repositories) come back as blocking views too, and
a blocking unit of work works with a plain ``with`` statement.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar

import attrs

T = TypeVar("T")

_WRAPPED_PACKAGES = ("strongroom.ports", "strongroom.adapters")


class EventLoopThread:
    """An event loop running forever in a daemon thread of its own."""

    def __init__(self, name: str = "strongroom-blocking") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result (or exception)."""
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a blocking call from inside its own event loop would deadlock")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result()

    def close(self) -> None:
        """Stop the loop and its thread."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


# Whether this thread has a blocking unit of work open.
_units = threading.local()

_shared: list[EventLoopThread] = []  # at most one: the process's shared loop thread
_shared_lock = threading.Lock()


def default_loop() -> EventLoopThread:
    """The process's shared loop thread for blocking views, started on first use."""
    with _shared_lock:
        if not _shared or _shared[0].loop.is_closed():
            _shared[:] = [EventLoopThread()]
        return _shared[0]


def blocking_call(coroutine: Coroutine[Any, Any, T], loop: EventLoopThread | None = None) -> T:
    """Run one coroutine to completion from synchronous code."""
    return (loop or default_loop()).run(coroutine)


def _wants_view(value: object) -> bool:
    """Services (objects with coroutine methods) and records that hold services (such as
    the facade's ``Dependencies``) get a view; plain values never do, so they compare and
    print as themselves."""
    if isinstance(value, Blocking) or inspect.isroutine(value) or isinstance(value, type):
        return False
    kind = type(value)
    if _has_coroutine_methods(kind):
        return True
    if attrs.has(kind) and kind.__module__.startswith(_WRAPPED_PACKAGES):
        return any(_wants_view(getattr(value, field.name, None)) for field in attrs.fields(kind))
    return False


_coroutine_classes: dict[type[Any], bool] = {}


def _has_coroutine_methods(kind: type[Any]) -> bool:
    known = _coroutine_classes.get(kind)
    if known is None:
        known = _coroutine_classes[kind] = any(
            inspect.iscoroutinefunction(getattr(kind, name, None)) for name in dir(kind)
        )
    return known


def unwrapped(value: T) -> T:
    """The object behind a blocking view (or ``value`` itself when it is none)."""
    if isinstance(value, Blocking):
        target: T = object.__getattribute__(value, "_target")
        return target
    return value


class Blocking:
    """A synchronous view of an object with coroutine methods."""

    def __init__(self, target: object, loop: EventLoopThread) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_loop", loop)

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        target: object = object.__getattribute__(self, "_target")
        return type(target)

    def __getattr__(self, name: str) -> Any:
        target = object.__getattribute__(self, "_target")
        loop: EventLoopThread = object.__getattribute__(self, "_loop")
        value = getattr(target, name)
        if inspect.isroutine(value):
            return _blocking_function(value, loop)
        if callable(value) and not isinstance(value, type):
            return Blocking(value, loop)  # a partial or callable object: its attributes too
        return _view(value, loop)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_target"), name, unwrapped(value))

    def __delattr__(self, name: str) -> None:
        delattr(object.__getattribute__(self, "_target"), name)

    def __repr__(self) -> str:
        return f"blocking({object.__getattribute__(self, '_target')!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = object.__getattribute__(self, "_target")
        loop: EventLoopThread = object.__getattribute__(self, "_loop")
        return _blocking_function(target, loop)(*args, **kwargs)

    def __enter__(self) -> Any:
        target = object.__getattribute__(self, "_target")
        loop: EventLoopThread = object.__getattribute__(self, "_loop")
        if getattr(_units, "open", False):
            # The inner unit would wait for the outer one's locks forever.
            raise RuntimeError("a unit of work is already open on this thread")
        entered = loop.run(target.__aenter__())
        _units.open = True
        return self if entered is target else _view(entered, loop)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> Any:
        target = object.__getattribute__(self, "_target")
        loop: EventLoopThread = object.__getattribute__(self, "_loop")
        _units.open = False
        return loop.run(target.__aexit__(exc_type, exc, traceback))


def _view(value: Any, loop: EventLoopThread) -> Any:
    return Blocking(value, loop) if _wants_view(value) else value


def _blocking_function(function: Callable[..., Any], loop: EventLoopThread) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        args = tuple(unwrapped(arg) for arg in args)
        kwargs = {key: unwrapped(value) for key, value in kwargs.items()}
        result = function(*args, **kwargs)
        if inspect.iscoroutine(result):
            result = loop.run(result)
        return _view(result, loop)

    call.__name__ = getattr(function, "__name__", "call")
    call.__doc__ = getattr(function, "__doc__", None)
    return call


def blocking(target: object, loop: EventLoopThread | None = None) -> Any:
    """A blocking view of ``target`` (usually the ``Strongroom`` facade).

    Every coroutine method of the view runs on ``loop`` (by default one shared daemon
    thread) and returns its result; calling it from inside that loop raises
    ``RuntimeError`` instead of deadlocking.
    """
    return Blocking(unwrapped(target), loop or default_loop())
