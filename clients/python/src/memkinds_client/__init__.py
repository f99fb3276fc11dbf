"""Typed sync and async client for the agent memory service (REST API, `Authorization: Bearer`)."""

from memkinds_client.aio import AsyncMemoryClient
from memkinds_client.client import MemoryClient, next_cursor
from memkinds_client.errors import (
    AuthenticationError,
    MemoryApiError,
    NotFound,
    RateLimited,
    Unavailable,
    ValidationError,
)
from memkinds_client.operations import OPERATIONS

__all__ = [
    "OPERATIONS",
    "AsyncMemoryClient",
    "AuthenticationError",
    "MemoryApiError",
    "MemoryClient",
    "NotFound",
    "RateLimited",
    "Unavailable",
    "ValidationError",
    "next_cursor",
]
__version__ = "1.1.0"
