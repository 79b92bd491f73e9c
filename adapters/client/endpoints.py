"""The machinery that turns one described endpoint into a sync and an async method.

An endpoint is declared once, as a typed signature in ``Operations``: the decorator
reads the signature (path placeholders, query or body fields, ``if_match`` and
``idempotency_key`` headers) and the return annotation (how to decode the answer). On a
``Client`` it is a plain method; on an ``AsyncClient`` a coroutine method. A paged
endpoint also offers ``.iterate(...)``, which follows ``next_cursor`` to the end.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

import attrs
import httpx2

from strongroom.adapters.wire.pages import Page
from strongroom.client.calls import Call
from strongroom.client.converter import converter

P = ParamSpec("P")
T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - an item of a page


class Unset(Enum):
    """The type of ``UNSET``: a field an update leaves as it is (``None`` clears it)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset.UNSET
_HEADERS = {"if_match": "If-Match", "idempotency_key": "Idempotency-Key"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class SyncPerformer:
    """What a blocking client is to its endpoints: it carries out a call (``Client``)."""

    def perform(self, call: Call[T]) -> T:
        """Carry out ``call``, with retries."""
        raise NotImplementedError


class AsyncPerformer:
    """What an asyncio client is to its endpoints (``AsyncClient``)."""

    def perform(self, call: Call[T]) -> Awaitable[T]:
        """Carry out ``call``, with retries."""
        raise NotImplementedError


@attrs.frozen
class Spec:
    """What the client knows of one operation; a test holds it to ``/openapi.json``."""

    method: str
    path: str  # with the client's placeholder names: /v1/backups/{backup_id}
    operation_id: str
    body: str | None  # "json", "form" or None
    creates: bool
    auth: bool
    paged: bool

    @property
    def placeholders(self) -> list[str]:
        """The path's placeholders, in order."""
        return _PLACEHOLDER.findall(self.path)


class Endpoint(Generic[P, T]):
    """One operation: a method of ``Client`` returning ``T`` and of ``AsyncClient``
    returning an awaitable of ``T``."""

    def __init__(self, function: Callable[..., Any], spec: Spec) -> None:
        self.function = function
        self.spec = spec
        self.signature = inspect.signature(function)
        self.__doc__ = function.__doc__
        self.__name__ = function.__name__
        self._decode: Callable[[httpx2.Response], T] | None = None

    def prepare(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Call[T]:
        """The call for these arguments."""
        bound = self.signature.bind(None, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        values.pop(next(iter(self.signature.parameters)))  # self
        path = _PLACEHOLDER.sub(lambda m: quote(_text(values.pop(m[1])), safe=""), self.spec.path)
        headers = {
            _HEADERS[name]: _text(values.pop(name))
            for name in list(values)
            if name in _HEADERS and values[name] is not None
        }
        key = headers.pop("Idempotency-Key", None)
        for name in _HEADERS:
            values.pop(name, None)
        # Left out: fields not given (UNSET), and None where None is the default (the
        # field is optional, not necessarily nullable); an explicit None of an UNSET
        # default is sent as null (it clears, e.g. a schedule).
        fields = {
            name: value
            for name, value in values.items()
            if value is not UNSET
            and not (value is None and self.signature.parameters[name].default is None)
        }
        query: dict[str, str] = {}
        json: Any = None
        form: dict[str, str] | None = None
        if self.spec.body == "form":
            form = {name: _text(value) for name, value in fields.items() if value is not None}
        elif self.spec.body == "json":
            json = {name: converter.unstructure(value) for name, value in fields.items()} or None
        else:
            query = {name: _text(value) for name, value in fields.items() if value is not None}
        return Call(
            self.spec.method,
            path,
            self.decoder(),
            query=query,
            json=json,
            form=form,
            headers=headers,
            creates=self.spec.creates,
            idempotency_key=key,
            auth=self.spec.auth,
        )

    def decoder(self) -> Callable[[httpx2.Response], T]:
        """How to read a successful answer, from the return annotation."""
        if self._decode is None:
            hint: Any = typing.get_type_hints(
                self.function, vars(sys.modules[self.function.__module__])
            )["return"]

            def decode(response: httpx2.Response) -> Any:
                if response.status_code == 204 or hint is type(None):
                    return None
                if hint is str:
                    return response.text
                return converter.structure(response.json(), hint)

            self._decode = decode
        return self._decode

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Endpoint[P, T]: ...
    @overload
    def __get__(self, client: AsyncPerformer, owner: type[Any]) -> AsyncMethod[P, T]: ...
    @overload
    def __get__(self, client: SyncPerformer, owner: type[Any]) -> SyncMethod[P, T]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:
            return self
        return client.bind(self)


class PagedEndpoint(Endpoint[P, Page[I]]):
    """A list operation: one page per call, or every item with ``.iterate(...)``."""

    @overload
    def __get__(self, client: None, owner: type[Any]) -> PagedEndpoint[P, I]: ...
    @overload
    def __get__(self, client: AsyncPerformer, owner: type[Any]) -> AsyncPagedMethod[P, I]: ...
    @overload
    def __get__(self, client: SyncPerformer, owner: type[Any]) -> SyncPagedMethod[P, I]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:
            return self
        return client.bind(self)


class SyncMethod(Generic[P, T]):
    """An endpoint bound to a ``Client``."""

    def __init__(self, client: SyncPerformer, endpoint: Endpoint[P, T]) -> None:
        self._client = client
        self._endpoint = endpoint
        self.__doc__ = endpoint.__doc__
        self.__name__ = endpoint.__name__
        self.__signature__ = endpoint.signature

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._client.perform(self._endpoint.prepare(args, kwargs))


class SyncPagedMethod(SyncMethod[P, Page[I]]):
    """A list endpoint bound to a ``Client``."""

    def iterate(self, *args: P.args, **kwargs: P.kwargs) -> Iterator[I]:
        """Every item, page after page (following ``next_cursor``)."""
        arguments: dict[str, Any] = dict(kwargs)
        while True:
            page = self._client.perform(self._endpoint.prepare(args, arguments))
            yield from page.data
            if not page.next_cursor:
                return
            arguments["cursor"] = page.next_cursor


class AsyncMethod(Generic[P, T]):
    """An endpoint bound to an ``AsyncClient``."""

    def __init__(self, client: AsyncPerformer, endpoint: Endpoint[P, T]) -> None:
        self._client = client
        self._endpoint = endpoint
        self.__doc__ = endpoint.__doc__
        self.__name__ = endpoint.__name__
        self.__signature__ = endpoint.signature

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[T]:
        return self._client.perform(self._endpoint.prepare(args, kwargs))


class AsyncPagedMethod(AsyncMethod[P, Page[I]]):
    """A list endpoint bound to an ``AsyncClient``."""

    async def iterate(self, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[I]:
        """Every item, page after page (following ``next_cursor``)."""
        arguments: dict[str, Any] = dict(kwargs)
        while True:
            page = await self._client.perform(self._endpoint.prepare(args, arguments))
            for item in page.data:
                yield item
            if not page.next_cursor:
                return
            arguments["cursor"] = page.next_cursor


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def endpoint(
    method: str,
    path: str,
    *,
    body: str | None = None,
    creates: bool = False,
    auth: bool = True,
) -> Callable[[Callable[Concatenate[Any, P], T]], Endpoint[P, T]]:
    """Declare an operation: ``method`` and ``path`` (placeholders name parameters);
    ``body`` "json" or "form" when the remaining parameters form the body (otherwise
    they are the query); ``creates`` for a POST that takes an ``Idempotency-Key``."""

    def declare(function: Callable[Concatenate[Any, P], T]) -> Endpoint[P, T]:
        spec = Spec(method, path, _camel(function.__name__), body, creates, auth, paged=False)
        return Endpoint(function, spec)

    return declare


def paged(
    path: str,
) -> Callable[[Callable[Concatenate[Any, P], Page[I]]], PagedEndpoint[P, I]]:
    """Declare a list operation (``GET``, ``limit`` and ``cursor`` among its parameters)."""

    def declare(function: Callable[Concatenate[Any, P], Page[I]]) -> PagedEndpoint[P, I]:
        spec = Spec("GET", path, _camel(function.__name__), None, False, True, paged=True)
        return PagedEndpoint(function, spec)

    return declare


def _text(value: Any) -> str:
    """A path, query, header or form value as text."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)
