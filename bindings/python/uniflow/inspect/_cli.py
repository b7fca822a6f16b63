"""The command line of the inspector: ``python3 -m uniflow.inspect`` (and
``uniflow inspect``, which runs it).

Exit status: 0 after SIGINT or SIGTERM, 1 when a definition or the journal is bad
(or the port cannot be had), 2 on a usage error (the NATS follower included: this
build has no NATS adapter).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["main"]

DESCRIPTION = """\
Serves the live model of a journal file in a browser: every feature and instance,
the mutation log with filters, the graph, the armed timers and time travel. The
first line printed is the page's URL with its token; every request without the
token is refused (403). See docs/inspector.md."""

EPILOG = """\
Exit status: 0 when stopped (Ctrl-C, SIGTERM), 1 when a definition or the journal
is bad or the port cannot be had, 2 on a usage error."""

NATS_MISSING = ("following a NATS model (--nats) needs the NATS adapter, which this build does not have; "
                "follow a journal file with --journal instead")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="uniflow inspect",
        usage="%(prog)s DEFS... --journal FILE [--host HOST] [--port PORT] [--allow-submit]\n"
              "       %(prog)s DEFS... --nats URL --model NAME --partitions N",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("definitions", nargs="*", metavar="DEFS", help="definition files, in the journal's order")
    p.add_argument("--journal", metavar="FILE", help="the journal file to follow as it grows")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="the port (default 0: any free port)")
    p.add_argument("--allow-submit", action="store_true",
                   help="let the page try actions (on a copy of the model: the journal's writer is another process)")
    p.add_argument("--nats", metavar="URL", help="follow a model shared over NATS (needs the NATS adapter)")
    p.add_argument("--model", metavar="NAME", help="the shared model's name (with --nats)")
    p.add_argument("--partitions", type=int, metavar="N", help="the shared model's partitions (with --nats)")
    return p


def _fail(message: str, status: int = 1) -> int:
    print(f"uniflow inspect: {message}", file=sys.stderr)
    return status


def _definitions(paths: Sequence[str]) -> List[Dict[str, Any]]:
    """The features of the definition files, registered in order (the library checks them)."""
    from ..dispatcher import Dispatcher
    from ._scratch import register_with_placeholders

    with Dispatcher() as d:
        for path in paths:
            try:
                register_with_placeholders(d, path)
            except Exception as error:
                raise SystemExit(_fail(f"{path}: {getattr(error, 'message', error)}"))
        return list(d.definitions.get("features", []))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the inspector until SIGINT or SIGTERM; returns the exit status."""
    p = parser()
    args = p.parse_args(argv)
    if args.nats is not None or args.model is not None or args.partitions is not None:
        return _fail(NATS_MISSING, 2)
    if args.journal is None:
        p.print_usage(sys.stderr)
        return _fail("give the journal to follow: --journal FILE", 2)
    if not args.definitions:
        p.print_usage(sys.stderr)
        return _fail("give the definition files the journal was written with", 2)
    if not 0 <= args.port <= 65535:
        return _fail(f"--port {args.port}: not a port (0 to 65535)", 2)
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return _fail("the inspector needs aiohttp: pip install 'uniflow[inspect]' (or python3 -m pip install aiohttp)")
    from ..errors import UniflowError
    from ._server import InspectorServer
    from ._sources import JournalSource

    try:
        features = _definitions(args.definitions)
    except SystemExit as exit:
        return int(exit.code or 1)
    source = JournalSource(features, args.journal)
    try:
        source.check()
    except OSError as error:
        source.close()
        return _fail(f"cannot read the journal '{args.journal}': {error.strerror or error}")
    except UniflowError as error:
        source.close()
        return _fail(f"'{args.journal}' is not a journal of these definitions: {error.message}")
    server = InspectorServer(source, host=args.host, port=args.port, allow_submit=args.allow_submit)
    return asyncio.run(_serve(server))


async def _serve(server: "Any") -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await server.start()
    except OSError as error:
        await server.stop()
        return _fail(f"cannot listen on {server.host}:{server.port}: {error.strerror or error}")
    print(server.url, flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0
