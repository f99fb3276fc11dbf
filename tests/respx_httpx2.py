"""Lets respx stub the openai SDK, which speaks HTTPX2 (respx itself patches only legacy httpx).

Importing this module registers a respx mocker named "httpx2" that intercepts
`httpx2.HTTPTransport.handle_request`, hands respx an equivalent `httpx.Request` and turns the routed
`httpx.Response` back into an `httpx2.Response`. Use it as `@respx.mock(using="httpx2")`; routes,
side effects and call assertions are plain respx.
"""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
from respx.mocks import AbstractRequestMocker


class HTTPX2Mocker(AbstractRequestMocker):
    name = "httpx2"
    targets = ["httpx2._transports.default.HTTPTransport"]
    target_methods = ["handle_request"]

    @classmethod
    def to_httpx_request(cls, **kwargs: Any) -> httpx.Request:
        request: httpx2.Request = kwargs["request"]
        return httpx.Request(
            request.method, str(request.url), headers=list(request.headers.raw), content=request.read()
        )

    @classmethod
    def from_sync_httpx_response(cls, httpx_response: httpx.Response, target: Any, **kwargs: Any) -> Any:
        httpx_response.read()
        return httpx2.Response(
            httpx_response.status_code,
            headers=list(httpx_response.headers.raw),
            content=httpx_response.content,
            request=kwargs["request"],
        )
