"""Let respx stub the OpenAI SDK, whose 3.x releases send through httpx2/httpcore2 instead of
httpx/httpcore. respx patches httpcore's connection classes; httpcore2 is a fork with the same
request and response shapes, so adding its classes as targets is enough. Import once (conftest)."""

from __future__ import annotations

from respx.mocks import HTTPCoreMocker

HTTPCORE2_TARGETS = (
    "httpcore2._sync.connection.HTTPConnection",
    "httpcore2._sync.connection_pool.ConnectionPool",
    "httpcore2._sync.http_proxy.HTTPProxy",
    "httpcore2._async.connection.AsyncHTTPConnection",
    "httpcore2._async.connection_pool.AsyncConnectionPool",
    "httpcore2._async.http_proxy.AsyncHTTPProxy",
)


def install() -> None:
    try:
        import httpcore2  # noqa: F401
    except ImportError:  # an SDK on plain httpx needs nothing
        return
    HTTPCoreMocker.add_targets(*HTTPCORE2_TARGETS)
