"""/context/all's parts: each in a savepoint inside a caller's transaction, and without a
transaction of its own when the call runs on its own (a part only reads)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory_app.selectors.context.turn import ContextRequest, context_all
from memory_app.services.kinds.sessions import MessageInput, session_append
from tests.factories import TenantFactory
from tests.factories.kinds import memories_with_embeddings


def _call(tenant) -> tuple[str, dict, list[str]]:  # type: ignore[no-untyped-def]
    request = ContextRequest(query="Where does Mia go to school?", user_id="u1", session_id="s1")
    with CaptureQueriesContext(connection) as queries:
        result = context_all(tenant=tenant, request=request)
    assert result.errors == []
    return result.formatted, result.tokens, [q["sql"] for q in queries.captured_queries]


@pytest.mark.django_db(transaction=True)
def test_a_call_on_its_own_opens_no_transaction_per_part_and_answers_as_inside_one(settings) -> None:  # type: ignore[no-untyped-def]
    settings.EMBEDDING_STATS_FLUSH_SECONDS = 3600  # no statistics flush (a transaction) inside the call
    tenant = TenantFactory()
    memories_with_embeddings(
        tenant,
        ["Mia goes to Lincoln Elementary", "Mia turned 7 last week", "The user's car is blue"],
        user_id="u1",
    )
    session_append(
        tenant=tenant,
        session_id="s1",
        user_id="u1",
        messages=[MessageInput("user", "Mia starts second grade soon"), MessageInput("assistant", "Nice!")],
    )
    alone, alone_tokens, statements = _call(tenant)
    assert "Lincoln Elementary" in alone and "second grade" in alone
    assert "BEGIN" not in statements and not [s for s in statements if s.startswith("SAVEPOINT")]
    with transaction.atomic():
        inside, inside_tokens, nested = _call(tenant)
    assert (inside, inside_tokens) == (alone, alone_tokens)
    assert len([s for s in nested if s.startswith("SAVEPOINT")]) >= 4  # one per part
