from __future__ import annotations

from django.conf import settings
from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Stable, index-friendly pages (newest first); `page_size` may be asked for up to a limit."""

    ordering = "-id"
    page_size = settings.API_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = settings.API_MAX_PAGE_SIZE
