"""Typed sync and async client for the agent memory service (REST API, `Authorization: Bearer`)."""

from agent_memory_client.aio import AsyncMemoryClient
from agent_memory_client.client import MemoryClient, next_cursor
from agent_memory_client.errors import MemoryApiError
from agent_memory_client.operations import OPERATIONS

__all__ = ["OPERATIONS", "AsyncMemoryClient", "MemoryApiError", "MemoryClient", "next_cursor"]
__version__ = "1.0.0"
