"""Quotas through the API: a request rate per API key (429 with Retry-After) and active memories
per tenant (403 quota_exceeded), counted in the database's cache table or in Redis."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import caches

from memory_app.models import Memory
from memory_app.services.quotas import request_rate_wait
from memory_app.services.rows.memories import memory_insert
from tests.support.celery_live import REDIS_HOST, REDIS_PORT, redis_available

pytestmark = pytest.mark.django_db

DATABASE = {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "memory_app_quota_cache"}


@pytest.fixture(params=["database", "redis"])
def backend(request, settings):
    """The quota cache on each backend; Redis keys under a prefix of this test only."""
    quota = DATABASE
    if request.param == "redis":
        if not redis_available():
            pytest.skip(f"Redis is not reachable at {REDIS_HOST}:{REDIS_PORT}")
        quota = {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://{REDIS_HOST}:{REDIS_PORT}/0",
            "KEY_PREFIX": f"test-quota-{uuid.uuid4().hex[:12]}",
        }
    settings.CACHES = {**settings.CACHES, "quota": quota}
    yield request.param
    caches["quota"].clear() if request.param == "redis" else None


def test_past_its_rate_a_key_gets_429_with_retry_after(backend, tenant_a, settings):
    settings.QUOTA_REQUESTS_PER_MINUTE = 3
    answers = [tenant_a.client.get("/api/v1/memories") for _ in range(4)]
    assert [r.status_code for r in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"]["code"] == "throttled"


def test_each_key_has_its_own_rate(backend, tenant_a, tenant_b, settings):
    settings.QUOTA_REQUESTS_PER_MINUTE = 2
    for _ in range(2):
        assert tenant_a.client.get("/api/v1/memories").status_code == 200
    assert tenant_a.client.get("/api/v1/memories").status_code == 429
    assert tenant_b.client.get("/api/v1/memories").status_code == 200


def test_the_next_window_allows_the_key_again(backend, settings):
    settings.QUOTA_REQUESTS_PER_MINUTE = 1
    assert request_rate_wait(key_id=7, now=600.0) is None
    assert request_rate_wait(key_id=7, now=615.0) == 45
    assert request_rate_wait(key_id=7, now=660.0) is None


def test_a_store_past_the_memory_quota_is_403_and_stores_nothing(backend, tenant_a, settings):
    settings.QUOTA_MAX_MEMORIES = 2
    first = tenant_a.client.post(
        "/api/v1/memories", {"text": "User owns a red bike", "user_id": "u1"}, format="json"
    )
    assert first.status_code == 201
    batch = [{"text": "User is vegan", "user_id": "u1"}, {"text": "User lives in Oslo", "user_id": "u1"}]
    refused = tenant_a.client.post("/api/v1/memories", batch, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "quota_exceeded"
    assert Memory.objects.filter(tenant=tenant_a.tenant).count() == 1
    fits = tenant_a.client.post("/api/v1/memories", batch[:1], format="json")
    assert fits.status_code == 201
    again = tenant_a.client.post("/api/v1/memories", batch[1:], format="json")
    assert again.status_code == 403  # counted by the store in between, not only by the database


def test_the_quota_counts_the_database_again_once_the_cached_count_is_gone(backend, tenant_a, settings):
    settings.QUOTA_MAX_MEMORIES = 1
    body = {"text": "User owns a red bike", "user_id": "u1"}
    assert tenant_a.client.post("/api/v1/memories", body, format="json").status_code == 201
    caches["quota"].delete(f"memories:{tenant_a.tenant.pk}")
    memory_insert(tenant=tenant_a.tenant, text="User plays chess", user_id="u1")  # not through the quota
    refused = tenant_a.client.post(
        "/api/v1/memories", {"text": "User is vegan", "user_id": "u1"}, format="json"
    )
    assert refused.status_code == 403


def test_one_tenants_quota_leaves_another_tenant_alone(backend, tenant_a, tenant_b, settings):
    settings.QUOTA_MAX_MEMORIES = 1
    assert (
        tenant_a.client.post(
            "/api/v1/memories", {"text": "User owns a bike", "user_id": "u1"}, format="json"
        ).status_code
        == 201
    )
    assert (
        tenant_a.client.post(
            "/api/v1/memories", {"text": "User is vegan", "user_id": "u1"}, format="json"
        ).status_code
        == 403
    )
    assert (
        tenant_b.client.post(
            "/api/v1/memories", {"text": "User is vegan", "user_id": "u1"}, format="json"
        ).status_code
        == 201
    )


def test_an_interaction_past_the_quota_keeps_the_turn_and_says_why_in_warnings(backend, tenant_a, settings):
    settings.QUOTA_MAX_MEMORIES = 1
    memory_insert(tenant=tenant_a.tenant, text="User plays chess", user_id="u1")
    turn = {
        "session_id": "s1",
        "user_id": "u1",
        "user_message": "I love hiking.",
        "assistant_message": "Nice!",
    }
    response = tenant_a.client.post("/api/v1/interactions", turn, format="json")
    assert response.status_code == 201
    assert any("quota" in warning for warning in response.json()["warnings"])


def test_by_default_nothing_is_limited(tenant_a):
    for _ in range(30):
        assert tenant_a.client.get("/api/v1/memories").status_code == 200


def test_a_cache_that_is_down_never_fails_a_request(tenant_a, settings):
    settings.QUOTA_REQUESTS_PER_MINUTE = 1
    settings.QUOTA_MAX_MEMORIES = 1
    settings.CACHES = {
        **settings.CACHES,
        "quota": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        },
    }
    assert tenant_a.client.get("/api/v1/memories").status_code == 200
    assert tenant_a.client.get("/api/v1/memories").status_code == 200
    assert (
        tenant_a.client.post(
            "/api/v1/memories", {"text": "User is vegan", "user_id": "u1"}, format="json"
        ).status_code
        == 201
    )
