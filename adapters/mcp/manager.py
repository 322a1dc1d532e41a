"""The SDK's Streamable HTTP session manager with sessions any worker can serve.

The SDK keeps a 2025-11-25 session in one process's memory: another worker, or another host
behind a load balancer, answers its id with 404. Here the session's initialize facts are in the
database (sessions.py); a worker that gets an id it has no copy of checks them and builds its
copy as already initialized, then serves the request with the SDK's own transport and server
loop. A copy is a cache: dropping it (idle, restart) loses nothing but an answer it was waiting
for. Form-dialog answers that reach another worker travel to the asking one through Redis, or
PostgreSQL without it (relay.py). 2026-07-28 requests need none of this: the SDK serves them per request.

Every request reaches the SDK's own transport and server loop here; the one shortcut around
them is the fast path (lean.py), entered from http.py before this manager.

The SDK internals this module uses, all of them (the `mcp` pin in pyproject.toml points here;
tests/system and tests/adapters/mcp fail if a release changes them; move the pin with them):
- `StreamableHTTPSessionManager._handle_stateful_request` (overridden): a session is checked
  in the database (sessions.py), not in the process's dict, and rebuilt when absent.
- `StreamableHTTPSessionManager._handle_request` (overridden, then called): a session request
  naming a version no era speaks is refused as such, not as a modern request missing _meta.
- `_server_instances`, `_session_creation_lock`, `_discard_session`: the process's copies of
  sessions, kept, rebuilt and dropped exactly as the SDK keeps and drops its own.
- `_task_group`, `_lifespan_state`: a session's task (and the relay's listener) run in the
  manager's task group, served with the server's lifespan state, as the SDK starts its own.
- `ServerRunner._negotiate_initialize`: the version an initialize is answered with, so that the
  version stored for other workers is the one the SDK negotiates.
- `JSONRPCDispatcher._next_id`: the ids of requests this worker sends (a form dialog) carry
  its tag, so an answer posted to another worker finds its way back (relay.py).
`_handle_stateful_request` and our `_serve_session` (the SDK's `run_server` in
`_serve_opening_request`, with a connection that may be born initialized) follow the SDK 2.3
code they replace.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import anyio
from anyio.abc import TaskStatus
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import ServerRunner, serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import INVALID_REQUEST, ErrorData, InitializeRequestParams, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from adapters import strict_json
from adapters.mcp import answers, sessions
from adapters.mcp.relay import ID_BITS, Relay, owner_of
from adapters.mcp.server import Caller, run_sync

logger = logging.getLogger(__name__)

KEY_ID = "invoicebox_gateway.key_id"  # ASGI scope key: the pk of the key that authenticated
CALLER = "invoicebox_gateway.caller"  # ASGI scope key: the Caller the key became (http.py)
# ASGI scope key: the session the request names, resumed with the key (http.py); None when it
# is not live or not that key's. Absent: not looked up yet.
RESUMED = "invoicebox_gateway.resumed"


def not_found() -> Response:
    """The SDK's answer for a session it does not know: the client opens a new one."""
    body = JSONRPCError(
        jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message="Session not found")
    )
    return Response(
        body.model_dump_json(by_alias=True, exclude_unset=True),
        status_code=404,
        media_type="application/json",
    )


def _replayed(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body already read once more, then the client's own events."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _initialize_facts(body: bytes) -> tuple[str, dict[str, Any]] | None:
    """(negotiated version, client params) of an initialize request; None for anything else.

    The negotiation is the SDK's own (ServerRunner), so what is stored is what it answers."""
    try:
        message = strict_json.parse_body(body)
        if not isinstance(message, dict) or message.get("method") != "initialize":
            return None
        params, version = ServerRunner._negotiate_initialize(message.get("params"))
    except (strict_json.JsonRefused, ValueError):  # not JSON, or params the SDK will refuse
        return None
    return version, params.model_dump(by_alias=True, mode="json", exclude_none=True)


class SharedSessionManager(StreamableHTTPSessionManager):
    def __init__(
        self,
        app: Server[Any],
        *,
        security_settings: TransportSecuritySettings,
        idle_seconds: float,
        relay: Relay | None,
    ) -> None:
        # No per-process cap: the shared one (sessions.record) bounds the copies as well.
        # json_response here is what 2026-07-28 requests get (they carry no dialog); a
        # 2025-11-25 session picks its own in _transport().
        super().__init__(
            app,
            security_settings=security_settings,
            json_response=True,
            session_idle_timeout=idle_seconds,
            max_sessions=None,
        )
        self.relay = relay
        # This worker's request ids (tag * 2**ID_BITS + n): an answer says whose it is.
        self.tag = secrets.randbelow(2**31) + 1

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        try:
            async with super().run():
                if self.relay is not None:
                    assert self._task_group is not None
                    self._task_group.start_soon(self.relay.listen, self.tag, self._deliver_answer)
                yield
        finally:  # after the listener is cancelled with the manager's task group
            if self.relay is not None:
                with anyio.CancelScope(shield=True):
                    await self.relay.aclose()

    @property
    def copies(self) -> int:
        """Sessions this process holds in memory now."""
        return len(self._server_instances)

    async def forget(self, session_id: str) -> None:
        """Drop this worker's copy of a session that was closed elsewhere or just now."""
        transport = self._server_instances.get(session_id)
        if transport is not None:
            await self._discard_session(session_id, transport)

    async def _handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The SDK's routing, except that a session request naming a version no era speaks is
        refused as such (the SDK's modern path would ask for a _meta it never needs)."""
        request = Request(scope, receive)
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if (
            version is not None
            and request.headers.get(MCP_SESSION_ID_HEADER)
            and version not in HANDSHAKE_PROTOCOL_VERSIONS
            and version not in MODERN_PROTOCOL_VERSIONS
        ):
            body = await request.body() if request.method == "POST" else b""
            await answers.unsupported_version(version, body)(scope, receive, send)
            return
        await super()._handle_request(scope, receive, send)

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        session_id = request.headers.get(MCP_SESSION_ID_HEADER)
        key_id = scope[KEY_ID]
        body = await request.body() if request.method == "POST" else b""
        receive = _replayed(body, receive)
        if session_id is None:
            await self._open(key_id, body, scope, receive, send)
            return
        facts = (
            scope[RESUMED]
            if RESUMED in scope
            else await run_sync(sessions.resume, session_id, key_id, answers.is_call(body))
        )
        if facts is None:  # closed, expired, evicted, unknown, or another key's
            await self.forget(session_id)
            await not_found()(scope, receive, send)
            return
        if request.method == "DELETE":
            await run_sync(sessions.end, session_id)
            if session_id not in self._server_instances:
                await Response(status_code=200)(scope, receive, send)
                return
        owner = owner_of(body) if body else None
        if owner is not None and owner != self.tag and self.relay is not None:
            await self.relay.publish(owner, session_id, scope["headers"], body)
            await Response(status_code=202)(scope, receive, send)  # as the SDK does for answers
            return
        transport = self._server_instances.get(session_id) or await self._restore(facts)
        await transport.handle_request(scope, receive, send)
        if transport.is_terminated:
            await self._discard_session(session_id, transport)

    async def _open(
        self, key_id: int, body: bytes, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """A request without a session id: only an initialize opens one, within the key's,
        its contour's and the deployment's caps. It is recorded before it is answered, so the
        client's next request may go to any worker. Any other answer names no session."""
        facts = _initialize_facts(body)
        transport = self._transport(uuid4().hex, facts[1] if facts is not None else None)
        session_id = transport.mcp_session_id
        assert session_id is not None
        if facts is not None:
            try:
                closed = await run_sync(sessions.record, session_id, key_id, *facts)
            except sessions.SessionRefused as refusal:
                caller = scope.get(CALLER)
                response = await run_sync(
                    answers.refused, refusal, body, caller if isinstance(caller, Caller) else None
                )
                await response(scope, receive, send)
                return
            for other in closed:
                await self.forget(other)
        self._server_instances[session_id] = transport
        established = False
        try:
            assert self._task_group is not None
            await self._task_group.start(self._serve_session, transport, None)
            status = await _status_of(
                transport.handle_request, scope, receive, send, keep_session_id=facts is not None
            )
            established = facts is not None and status is not None and status < 400
        finally:
            if not established:
                await self._discard_session(session_id, transport)
                if facts is not None:
                    await run_sync(sessions.end, session_id)

    async def _restore(self, facts: sessions.SessionFacts) -> StreamableHTTPServerTransport:
        """This worker's copy of a session opened elsewhere (or before a restart). It is
        offered to other requests only once its task has connected it: a request for the
        session arriving meanwhile waits on the lock for the connected copy, instead of
        finding one that cannot take a request yet (the SDK's "No read stream writer
        available", a 500)."""
        async with self._session_creation_lock:
            existing = self._server_instances.get(facts.session_id)
            if existing is not None:
                return existing
            transport = self._transport(facts.session_id, facts.client_params)
            assert self._task_group is not None
            await self._task_group.start(self._serve_session, transport, facts)
            self._server_instances[facts.session_id] = transport
        logger.debug("MCP session %s restored on this worker", facts.session_id[:8])
        return transport

    def _transport(
        self, session_id: str, client_params: dict[str, Any] | None
    ) -> StreamableHTTPServerTransport:
        """The SDK's transport for one session: a JSON body per request, or an SSE stream when
        the client declared elicitation (the dialog confirmation asks it in the middle of a
        tools/call, which only a stream can carry). JSON costs a third less CPU per call."""
        return StreamableHTTPServerTransport(
            mcp_session_id=session_id,
            is_json_response_enabled=not sessions.declares_elicitation(client_params),
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )

    async def _serve_session(
        self,
        transport: StreamableHTTPServerTransport,
        facts: sessions.SessionFacts | None,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The SDK's session task (serve_loop under the idle scope), with a connection that is
        born initialized when `facts` restore it."""
        session_id = transport.mcp_session_id
        assert session_id is not None
        async with transport.connect() as (read_stream, write_stream):
            dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                read_stream, write_stream, inline_methods=frozenset({"initialize"})
            )
            # The SDK counts ids from 0 per dispatcher; these name this worker, and a random
            # start keeps a rebuilt copy from reusing the ids of the copy before it.
            dispatcher._next_id = (self.tag << ID_BITS) + secrets.randbelow(2 ** (ID_BITS - 1))
            connection = Connection.for_loop(dispatcher, session_id=session_id)
            if facts is not None:
                connection.client_params = InitializeRequestParams.model_validate(
                    facts.client_params, by_name=False
                )
                connection.protocol_version = facts.protocol_version
                connection.initialized.set()
            task_status.started()
            try:
                idle_scope = transport.idle_scope or anyio.CancelScope()
                with idle_scope:
                    await serve_connection(
                        self.app,
                        dispatcher,
                        connection=connection,
                        lifespan_state=self._lifespan_state,
                    )
            except Exception:
                logger.exception("MCP session %s crashed", session_id[:8])
            finally:
                await self._discard_session(session_id, transport)

    async def _deliver_answer(
        self, session_id: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """An answer another worker received for this one: posted into the local copy, as the
        client would have posted it here."""
        transport = self._server_instances.get(session_id)
        if transport is None:
            logger.info("MCP: an answer came for session %s, no longer held here", session_id[:8])
            return
        scope: Scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "headers": headers,
            "http_version": "1.1",
            "scheme": "http",
            "client": None,
            "server": None,
        }
        await transport.handle_request(scope, _replayed(body, _disconnected), _discard)


async def _disconnected() -> Message:
    await anyio.sleep_forever()
    raise AssertionError  # unreachable


async def _discard(message: Message) -> None:
    return None


async def _status_of(
    app: Any, scope: Scope, receive: Receive, send: Send, *, keep_session_id: bool = True
) -> int | None:
    """The status `app` answered with. An error answer, or any answer when not
    `keep_session_id`, loses the Mcp-Session-Id header: that session is never stored."""
    status: int | None = None
    header = MCP_SESSION_ID_HEADER.lower().encode()

    async def watch(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            if not keep_session_id or status >= 400:
                message = {
                    **message,
                    "headers": [
                        (k, v) for k, v in message.get("headers", []) if k.lower() != header
                    ],
                }
        await send(message)

    await app(scope, receive, watch)
    return status
