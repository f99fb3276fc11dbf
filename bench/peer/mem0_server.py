"""mem0 over HTTP for bench/peer.py: mem0ai 2.2.1 ships no REST server (its repository's `server/`
is not in the package), so this is the thin FastAPI wrapper that server is, with its two routes the
benchmark uses, `POST /memories` and `POST /search`, as plain (threadpool) endpoints, served by
uvicorn with one worker. Run by var/peer-venv's Python:

    var/peer-venv/bin/python bench/peer/mem0_server.py SERVICE_SITE_PACKAGES PORT CONFIG_JSON

CONFIG_JSON: mem0_side.py's `init` command (database, collection, torch threads).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mem0_side
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

memory = mem0_side.build_memory(json.loads(sys.argv[3]))
app = FastAPI(title="mem0 (bench wrapper)")


class Message(BaseModel):
    role: str
    content: str


class MemoryCreate(BaseModel):
    messages: list[Message]
    user_id: str
    infer: bool = True


class SearchRequest(BaseModel):
    query: str
    user_id: str
    top_k: int = 10


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/memories")
def add_memory(body: MemoryCreate) -> dict[str, Any]:
    messages = [m.model_dump() for m in body.messages]
    return memory.add(messages, user_id=body.user_id, infer=body.infer)


@app.post("/search")
def search_memories(body: SearchRequest) -> dict[str, Any]:
    return memory.search(body.query, filters={"user_id": body.user_id}, top_k=body.top_k)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False)
