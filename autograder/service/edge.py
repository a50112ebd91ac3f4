"""The service's edge: what a connection, a request body and a client's value may be before
any route sees them.

``autograder serve`` may run with no proxy in front (``--tls-cert``), so the limits a proxy
would give are the service's own, in two layers:

- **connections** (``edge_protocol``, uvicorn's h11 protocol with a cap and firmer timeouts): at most
  ``max_connections`` open at once (one more is closed as soon as it is accepted, before a
  byte is read), and a connection that has not sent a whole request head within
  ``header_timeout_s``, or nothing for ``keep_alive_s`` between requests, is dropped at once
  (uvicorn alone waits for ever for a first head, 1,025 half-sent heads used up its file
  descriptors; and its graceful close of an idle TLS connection keeps it, counted, until the
  client answers or 30 s pass). When the server stops, an idle connection is dropped too (a
  graceful close made ``serve --tls-cert`` wait 30 s on SIGTERM for each idle browser), while a
  connection in the middle of a request gets its response. uvicorn's own limits stay on: ``limit_concurrency`` (503
  past it) and h11's cap on the size of a request head.
- **bodies** (``BodyLimit``, an ASGI middleware): every request body is counted while it
  streams in, ``Content-Length`` or not (chunked), and refused with 413 the moment it is over
  its route's limit (the upload limit on the upload route, ``form_limit_bytes`` on every other
  route, the LTI launch included); a body that stalls for ``body_idle_timeout_s`` or takes
  longer than ``body_timeout_s`` in all is refused with 408.

Values from a client or an LMS that the app compares or stores are checked here too
(``token``): a secret, a state or a CSRF token is short printable ASCII or the request is a
400, never a 500 from the comparison.
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from autograder.exceptions import Refused
from autograder.i18n.runtime import N_

TOKEN_MAX_CHARS = 512


@dataclass(frozen=True)
class EdgeLimits:
    """The edge's limits; ``autograder serve`` takes ``max_connections`` from ``--max-connections``."""

    max_connections: int = 400          # open at once; each is a file descriptor (the soft limit is raised)
    header_timeout_s: float = 10.0      # from accept to a whole request head
    keep_alive_s: float = 5.0           # idle between two requests on one connection (uvicorn's)
    max_header_bytes: int = 16 * 1024   # a request head larger than this is a 400 (h11's)
    form_limit_bytes: int = 1024 * 1024  # every body but an upload: launches, logins, marking forms
    body_idle_timeout_s: float = 20.0   # no byte of the body for this long: 408
    body_timeout_s: float = 120.0       # the whole body (5 MiB at ~45 kB/s): 408 past it


@dataclass(frozen=True)
class BodyCap:
    """A route's largest body in bytes, and the refusal past it: a catalog message (``N_``)
    whose ``{size}`` is ``size_mib``, the limit as the person sending it knows it."""

    limit_bytes: int
    advice: str
    size_mib: float


def token(value: object, what: str) -> str:
    """``value`` as a secret, state or CSRF token may be: printable ASCII, not too long.

    Anything else cannot match (ours are URL-safe) and would make ``hmac.compare_digest``
    raise: refused here with a 400 that tells the learner what to do, in their language, and
    whoever runs the service which value is wrong."""
    text = str(value or "")
    if len(text) > TOKEN_MAX_CHARS or not (text.isascii() and text.isprintable()):
        raise Refused(400, N_("This request carries a value this service did not issue: start again from the "
                              "course page in the LMS."),
                      detail=f"The {what} in this request is not one this service issued (it must be short "
                             "printable ASCII).")
    return text


def edge_protocol(limits: EdgeLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a connection cap, a timeout on the first request head, and
    connections it gives up on, or idle when the server stops, dropped rather than closed gracefully."""

    class EdgeProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.connections) >= limits.max_connections:
                transport.abort()  # nothing read, nothing kept: the descriptor is freed at once
                return
            super().connection_made(transport)
            self._head_timer = self.loop.call_later(limits.header_timeout_s, self._head_timeout)

        def _head_timeout(self) -> None:
            # ``cycle`` is set once a whole request head has arrived; later heads on the same
            # connection are under the keep-alive timeout below
            if getattr(self, "cycle", None) is None and not self.transport.is_closing():
                self.transport.abort()

        def timeout_keep_alive_handler(self) -> None:
            # uvicorn closes an idle connection gracefully; over TLS that waits up to 30 s for the
            # client's close_notify, with the connection still counted against the cap. A client
            # that sent nothing for ``keep_alive_s`` gets no such grace: the connection is dropped.
            if not self.transport.is_closing():
                self.transport.abort()

        def shutdown(self) -> None:
            # the server stopping: uvicorn closes an idle keep-alive connection gracefully, which
            # over TLS waits up to 30 s for a close_notify an idle client never sends, and the server
            # waits for every connection. An idle one is dropped; one in the middle of a request
            # is still let finish its response (uvicorn's own shutdown).
            if self.cycle is None or self.cycle.response_complete:
                self.transport.abort()
            else:
                super().shutdown()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is None:  # refused by connection_made: nothing was set up
                return
            self._head_timer.cancel()
            super().connection_lost(exc)

    return EdgeProtocol


class BodyLimit:
    """Counts each request body as it streams in and stops it at its route's limit or deadline.

    ``limit_for(path)`` gives the route's ``BodyCap``: the limit in bytes and the sentence that
    tells the user what to do when it is passed. The refusal is raised from ``receive``, inside the route that reads
    the body, so the app's own error page answers it; the rest of the body is never read (the
    server closes the connection)."""

    def __init__(self, app: ASGIApp, *, limit_for: Callable[[str], BodyCap],
                 idle_timeout_s: float, total_timeout_s: float) -> None:
        self.app = app
        self.limit_for = limit_for
        self.idle_timeout_s = idle_timeout_s
        self.total_timeout_s = total_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.limit_for(scope["path"])
        limit = cap.limit_bytes
        declared = dict(scope["headers"]).get(b"content-length")
        over = declared is not None and (not declared.isdigit() or int(declared) > limit)
        received, started, done = 0, time.monotonic(), False

        async def counted() -> Message:
            nonlocal received, done
            if over:  # refused before a byte of it is read
                raise Refused(413, cap.advice, size=f"{cap.size_mib:.0f}")
            if done:  # the body is read: what follows is the disconnect, whenever it comes
                return await receive()
            left = self.total_timeout_s - (time.monotonic() - started)
            try:
                message = await asyncio.wait_for(receive(), timeout=max(0.0, min(self.idle_timeout_s, left)))
            except TimeoutError:
                raise Refused(408, N_("The request's body came too slowly and was dropped: check the connection "
                                      "and send it again.")) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise Refused(413, cap.advice, size=f"{cap.size_mib:.0f}")
                done = not message.get("more_body", False)
            return message

        await self.app(scope, counted, send)


def raise_open_files_limit() -> None:
    """Raise this process's soft limit on open files to the hard one (at most 65,536), so the
    connection cap, not the descriptor table, is what stops a flood of connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def uvicorn_config(app: Any, *, host: str, port: int, limits: EdgeLimits, tls: tuple[Path, Path] | None = None,
                   proxy_headers: bool = True, log_level: str = "warning",
                   lifespan: Literal["auto", "on", "off"] = "auto") -> uvicorn.Config:
    """How the service is served, by ``autograder serve`` and by the tests alike."""
    return uvicorn.Config(app, host=host, port=port, http=edge_protocol(limits), proxy_headers=proxy_headers,
                          forwarded_allow_ips="127.0.0.1", log_level=log_level, lifespan=lifespan,
                          limit_concurrency=limits.max_connections + 1, timeout_keep_alive=int(limits.keep_alive_s),
                          h11_max_incomplete_event_size=limits.max_header_bytes,
                          ssl_certfile=str(tls[0]) if tls else None, ssl_keyfile=str(tls[1]) if tls else None)
