"""The inspector: the live model in a browser, with its mutation log, graph, armed
timers and time travel (``docs/inspector.md``).

Three ways to start it:

* ``python3 -m uniflow.inspect DEFS... --journal FILE`` (or ``uniflow inspect``)
  follows a journal file as another process writes it;
* ``d.inspect()`` serves a dispatcher of this process from a thread and returns an
  :class:`Inspector` (``.url``, ``.close()``);
* ``--nats URL --model NAME --partitions N`` would follow a model shared across
  processes: that needs the NATS adapter, which this build does not have.

The page is at the URL printed first (``http://127.0.0.1:PORT/?token=TOKEN``);
without its token every request is refused (403). Needs the ``inspect`` extra
(``pip install 'uniflow[inspect]'``: aiohttp) and Graphviz's ``dot`` for the graph.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from ..dispatcher import Dispatcher

__all__ = ["Inspector", "serve"]


class Inspector:
    """An inspector serving a dispatcher of this process from its own thread (made
    by ``Dispatcher.inspect``). ``url`` is the page's address with its token;
    ``close()`` stops the server and ends its subscription (idempotent). A context
    manager."""

    def __init__(self, d: "Dispatcher", port: int = 0, host: str = "127.0.0.1",
                 allow_submit: bool = False) -> None:
        from ._server import InspectorServer
        from ._sources import HostSource

        self._server = InspectorServer(HostSource(d), host=host, port=port, allow_submit=allow_submit)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._failure: Optional[BaseException] = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="uniflow-inspector", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._failure is not None:
            self._thread.join()
            raise self._failure

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._server.start())
        except BaseException as error:  # reported by the constructor
            self._failure = error
            self._started.set()
            self._loop.run_until_complete(self._server.stop())
            self._loop.close()
            return
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._server.stop())
            self._loop.close()

    @property
    def url(self) -> str:
        """The page's address: ``http://HOST:PORT/?token=TOKEN``."""
        return self._server.url

    @property
    def token(self) -> str:
        """The token every request must carry."""
        return self._server.token

    def close(self) -> None:
        """Stops the server (its thread ends) and unsubscribes from the dispatcher."""
        if self._closed:
            return
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()

    def __enter__(self) -> "Inspector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<uniflow.inspect.Inspector {'closed' if self._closed else self.url}>"


def serve(d: "Dispatcher", port: int = 0, host: str = "127.0.0.1", allow_submit: bool = False) -> Inspector:
    """Serves ``d``'s inspector from a thread: see :class:`Inspector`."""
    return Inspector(d, port=port, host=host, allow_submit=allow_submit)
