"""The inspector's web server (aiohttp): the page, its JSON endpoints and the
server-sent events that keep it live. Every request needs the token."""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
from collections import OrderedDict
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Optional, Set, Tuple

from aiohttp import web

from ..errors import UniflowError
from ._graph import GraphError, marked_dot, render_svg
from ._sources import Source

__all__ = ["InspectorServer", "new_token"]

STATIC = Path(__file__).resolve().parent / "static"
#: the only files served, by their fixed names (never a path from a request)
ASSETS: Dict[str, str] = {"inspector.js": "text/javascript", "inspector.css": "text/css"}
#: mutations a change event or a first load carries at most (the log's length)
LOG_LIMIT = 500
#: seconds between two looks at a journal that may have grown
POLL_SECONDS = 0.05
#: seconds between two timer refreshes pushed to the page
TIMERS_SECONDS = 1.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A random token of ``A-Za-z0-9_-``."""
    return secrets.token_urlsafe(24)


def _json(value: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(value, separators=(",", ":")), status=status,
                        content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


_SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token stays out of Referer headers
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"),
}


class InspectorServer:
    """Serves one source on ``host:port`` (0: any free port)."""

    def __init__(self, source: Source, host: str = "127.0.0.1", port: int = 0,
                 allow_submit: bool = False, token: Optional[str] = None) -> None:
        self.source = source
        self.host = host
        self.port = port
        self.allow_submit = allow_submit
        self.token = token or new_token()
        self._token_bytes = self.token.encode()
        self._wakers: Set[asyncio.Event] = set()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Optional[web.AppRunner] = None
        self._tasks: List["asyncio.Task[None]"] = []
        self._closing = False
        self._svg_cache: "OrderedDict[Tuple[Any, ...], str]" = OrderedDict()
        #: (the features drawn, uf_graph_dot's text)
        self._dot: Optional[Tuple[Tuple[str, ...], str]] = None
        self._clock = "monotonic"
        self._pages = {name: (STATIC / name).read_text(encoding="utf-8") for name in ("index.html", *ASSETS)}

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/?token={self.token}"

    # -- lifetime ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Starts following the source and listens; ``port`` is then the real one."""
        self._loop = asyncio.get_running_loop()
        self.source.start(self.notify)
        self._clock = self.source.clock()
        app = web.Application(middlewares=[self._guard], client_max_size=1 << 20)
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{name}", self._asset)
        app.router.add_get("/api/info", self._info)
        app.router.add_get("/api/model", self._model)
        app.router.add_get("/api/mutations", self._mutations)
        app.router.add_get("/api/graph.svg", self._graph)
        app.router.add_get("/api/timers", self._timers)
        app.router.add_get("/api/events", self._events)
        app.router.add_post("/api/submit", self._submit)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        if self.source.kind == "journal":
            self._tasks.append(asyncio.ensure_future(self._follow()))

    async def stop(self) -> None:
        self._closing = True
        for waker in list(self._wakers):
            waker.set()
        for task in self._tasks:
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
        self.source.close()

    def notify(self) -> None:
        """Something changed (any thread): every page's event stream wakes up."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _wake(self) -> None:
        for waker in self._wakers:
            waker.set()

    async def _follow(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if await loop.run_in_executor(None, self.source.poll):
                self._wake()
            await asyncio.sleep(POLL_SECONDS)

    # -- the token ---------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.query.get("token")
        if given is None:
            header = request.headers.get("Authorization", "")
            if header[:7].lower() == "bearer ":
                given = header[7:].strip()
        if given is None or not hmac.compare_digest(given.encode(), self._token_bytes):
            response: web.StreamResponse = web.Response(
                status=403, text="403: this inspector needs its token (?token=... or Authorization: Bearer ...)\n")
        else:
            try:
                response = await handler(request)
            except web.HTTPException as error:  # a refusal (ours, or the router's 404 / 405)
                headers = {k: v for k, v in error.headers.items() if k.lower() != "content-length"}
                response = web.Response(status=error.status, body=error.body, headers=headers)
        for name, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    # -- the page ----------------------------------------------------------------------------

    async def _index(self, request: web.Request) -> web.Response:
        page = self._pages["index.html"].replace("{{token}}", self.token)
        return web.Response(text=page, content_type="text/html")

    async def _asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ASSETS:
            return _error(404, f"no asset {name!r}")
        return web.Response(text=self._pages[name], content_type=ASSETS[name])

    # -- the JSON endpoints ------------------------------------------------------------------

    def _info_value(self) -> Dict[str, Any]:
        self.source.refresh()
        first, last = self.source.history.seqs()
        return {"source": self.source.kind, "allow_submit": self.allow_submit,
                "features": [{"feature": f["feature"], "keyed": f.get("instances") == "keyed",
                              "states": list(f.get("states", {}))} for f in self.source.scratch.features],
                "generation": self.source.history.generation, "first_seq": first, "last_seq": last,
                "warning": self.source.warning, "clock": self._clock}

    async def _info(self, request: web.Request) -> web.Response:
        return _json(self._info_value())

    def _seq(self, request: web.Request, name: str) -> Optional[int]:
        text = request.query.get(name)
        if text is None or text == "":
            return None
        try:
            return int(text)
        except ValueError:
            raise web.HTTPBadRequest(text=json.dumps({"error": f"{name} must be a seq (an integer), got {text!r}"}),
                                     content_type="application/json")

    def _at(self, request: web.Request) -> Optional[int]:
        at = self._seq(request, "at")
        if at is not None and not self.source.history.knows(at):
            first, last = self.source.history.seqs()
            holds = f"it holds {first} to {last}" if first is not None else "it holds no seq yet"
            raise web.HTTPNotFound(text=json.dumps({"error": f"no seq {at} in the history ({holds})"}),
                                   content_type="application/json")
        return at

    def _model_value(self, at: Optional[int]) -> Dict[str, Any]:
        self.source.refresh()
        if at is None:
            return self.source.live_model()
        return self.source.normalize(self.source.history.model_at(at))

    async def _model(self, request: web.Request) -> web.Response:
        at = self._at(request)
        model = await asyncio.get_running_loop().run_in_executor(None, self._model_value, at)
        return _json(model)

    def _filtered(self, since: int, when: Optional[str], limit: Optional[int]) -> List[Dict[str, Any]]:
        self.source.refresh()
        mutations = self.source.history.mutations_since(since)
        if when is not None:
            mutations = self.source.scratch.matching(when, mutations)
        if limit is not None:
            mutations = mutations[-limit:] if limit > 0 else []
        return mutations

    async def _mutations(self, request: web.Request) -> web.Response:
        since = self._seq(request, "since")
        limit = self._seq(request, "limit")
        when = request.query.get("filter")
        if when is not None and when.strip() == "":
            when = None  # an empty box: no filter
        try:
            found = await asyncio.get_running_loop().run_in_executor(
                None, self._filtered, -1 if since is None else since, when, limit)
        except UniflowError as error:
            return _json({"error": error.message, "status": error.name}, 400)
        return _json(found)

    def _svg(self, at: Optional[int]) -> str:
        model = self._model_value(at)
        # The marking depends on the states only.
        key: Tuple[Any, ...] = (self.source.history.generation, json.dumps(
            {f: ([v["state"] for v in value.values()] if f in self.source.scratch.keyed else value["state"])
             for f, value in model.items()}, sort_keys=True))
        features = tuple(f["feature"] for f in self.source.scratch.features)
        key += features
        svg = self._svg_cache.get(key)
        if svg is None:
            if self._dot is None or self._dot[0] != features:
                self._dot = (features, self._graph_dot())
            svg = render_svg(marked_dot(self._dot[1], model, self.source.scratch.keyed))
            self._svg_cache[key] = svg
            while len(self._svg_cache) > 64:
                self._svg_cache.popitem(last=False)
        return svg

    def _graph_dot(self) -> str:
        from ._scratch import new_scratch_dispatcher

        d = new_scratch_dispatcher(self.source.scratch.features)
        try:
            return d.graph()
        finally:
            d.close()

    async def _graph(self, request: web.Request) -> web.Response:
        at = self._at(request)
        try:
            svg = await asyncio.get_running_loop().run_in_executor(None, self._svg, at)
        except GraphError as error:
            return _error(503, str(error))
        return web.Response(text=svg, content_type="image/svg+xml")

    async def _timers(self, request: web.Request) -> web.Response:
        return _json(await asyncio.get_running_loop().run_in_executor(None, self.source.timers))

    async def _submit(self, request: web.Request) -> web.Response:
        if not self.allow_submit:
            return _error(403, "submitting is off: start the inspector with --allow-submit "
                               "(from Python: inspect(allow_submit=True))")
        if request.content_type != "application/json":
            return _error(415, f"an action is sent as application/json, not {request.content_type or 'nothing'}")
        body = await request.read()
        # Bytes: always JSON text to the library, never the path of a file to read.
        status, answer = await asyncio.get_running_loop().run_in_executor(None, self.source.submit, body)
        self.notify()
        return _json(answer, status)

    # -- server-sent events ------------------------------------------------------------------

    def _change(self, since: int, generation: int) -> Tuple[Dict[str, Any], int, int]:
        """A change event for a page that has seen up to ``since`` of ``generation``."""
        history = self.source.history
        reset = generation != history.generation
        info = self._info_value()
        mutations = history.mutations_since(-1 if reset else since)
        truncated = len(mutations) > LOG_LIMIT
        event = dict(info, reset=reset, truncated=truncated, mutations=mutations[-LOG_LIMIT:],
                     model=self.source.live_model(), timers=self.source.timers())
        last = mutations[-1]["seq"] if mutations else (-1 if reset else since)
        return event, int(last), int(info["generation"])

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                               "X-Accel-Buffering": "no"})
        for name, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        await response.prepare(request)
        waker = asyncio.Event()
        self._wakers.add(waker)
        loop = asyncio.get_running_loop()
        since, generation, version = -1, -1, -1
        last_timers: Any = None
        try:
            while not self._closing:
                current = (self.source.history.generation, self.source.history.version)
                try:
                    if current != (generation, version):
                        event, since, generation = await loop.run_in_executor(None, self._change, since, generation)
                        version = current[1]
                        last_timers = event["timers"]
                        text = f"event: change\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"
                    else:
                        timers = await loop.run_in_executor(None, self.source.timers)
                        text = ": ping\n\n"
                        if timers != last_timers:
                            last_timers = timers
                            text = f"event: timers\ndata: {json.dumps(timers)}\n\n"
                except (UniflowError, OSError, ValueError) as error:
                    # Told to the page, which keeps what it has; the next change tries again.
                    text = f"event: failure\ndata: {json.dumps(str(error))}\n\n"
                await response.write(text.encode())
                try:
                    await asyncio.wait_for(waker.wait(), TIMERS_SECONDS)
                except asyncio.TimeoutError:
                    pass
                waker.clear()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._wakers.discard(waker)
        return response
