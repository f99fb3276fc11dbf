"""No admin page reads a vector column: 384 floats a row would dominate every list."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory_app.models import KeptApartPair
from memory_app.services.actors import Actor
from memory_app.services.review.clusters import cluster_merge
from tests.factories import TenantFactory
from tests.factories.review import plant_cluster

VECTOR_COLUMN = re.compile(
    r'"memory_app_memory"\."(embedding|search_vector)"|T\d+\."(embedding|search_vector)"'
)


@pytest.mark.django_db
def test_admin_lists_and_review_pages_never_load_vectors(admin_client):
    tenant = TenantFactory()
    merged, (a, b) = plant_cluster(tenant=tenant, texts=["likes tea", "likes green tea"])
    pending, _ = plant_cluster(tenant=tenant, texts=["walks daily", "walks every day"])
    change = cluster_merge(tenant=tenant, cluster_id=merged.pk, actor=Actor.system()).changes.get()
    lo, hi = sorted([a.pk, b.pk])
    KeptApartPair.objects.create(tenant=tenant, memory_low_id=lo, memory_high_id=hi)
    urls = [
        reverse("admin:memory_app_memory_changelist"),
        reverse("admin:memory_app_episodicmemory_changelist"),
        reverse("admin:memory_app_memory_change", args=[a.pk]),
        reverse("admin:memory_app_memorychange_changelist"),
        reverse("admin:memory_app_memorychange_change", args=[change.pk]),
        reverse("admin:memory_app_keptapartpair_changelist"),
        reverse("admin:memory_app_duplicatecluster_changelist"),
        reverse("admin:memory_app_duplicatecluster_review", args=[pending.pk]),
        reverse("admin:memory_app_duplicatecluster_review", args=[merged.pk]),
        reverse("admin:memory_app_memory_lineage", args=[change.result_id]),
        reverse("memory_dashboard"),
    ]
    for url in urls:
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url).status_code == 200, url
        loaded = [
            q["sql"] for q in queries if VECTOR_COLUMN.search(q["sql"]) and q["sql"].startswith("SELECT")
        ]
        assert not loaded, f"{url} loads vectors: {loaded[0][:300]}"
