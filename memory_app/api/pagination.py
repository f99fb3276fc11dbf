from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

BIGINT_MAX = 2**63 - 1


class IdCursorPagination(CursorPagination):
    """Stable, index-friendly pages (newest first); `page_size` may be asked for up to a limit."""

    ordering = "-id"
    page_size = settings.API_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = settings.API_MAX_PAGE_SIZE

    def decode_cursor(self, request: Request) -> Cursor | None:
        """DRF's cursor, whose position (an id here) must be an id: the cursor is only base64, so
        an edited one would otherwise reach the query as text ("abc") or beyond bigint."""
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        try:
            position = int(cursor.position)
        except (TypeError, ValueError):
            raise NotFound(self.invalid_cursor_message) from None
        if not -BIGINT_MAX <= position <= BIGINT_MAX:
            raise NotFound(self.invalid_cursor_message)
        return cursor
