from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from memory_app.models import DuplicateCluster, Memory, Tenant
from memory_eval.review_demo import DEMO_CASES

pytestmark = pytest.mark.django_db


def test_seed_review_demo_plants_pending_clusters_with_real_distances():
    out = StringIO()
    call_command("seed_review_demo", "--count", "3", "--apply", stdout=out)
    tenant = Tenant.objects.get(slug="review-demo")
    clusters = list(DuplicateCluster.objects.filter(tenant=tenant, status="pending").order_by("pk"))
    assert len(clusters) == 3 and "Planted 3 clusters" in out.getvalue()
    first_texts = sorted(
        Memory.objects.filter(cluster_memberships__cluster=clusters[0]).values_list("text", flat=True)
    )
    assert first_texts == sorted(DEMO_CASES[0][0])
    # A paraphrase is close and a changed value closer still: the real model's distances, not constants.
    assert all(0.0 < c.max_distance < 0.6 for c in clusters)


def test_seeding_twice_adds_clusters_instead_of_colliding():
    call_command("seed_review_demo", "--count", "2", "--apply", stdout=StringIO())
    call_command("seed_review_demo", "--count", "2", "--apply", stdout=StringIO())
    assert DuplicateCluster.objects.filter(tenant__slug="review-demo").count() == 4


def test_seed_review_demo_without_apply_plants_nothing_and_creates_no_tenant():
    out = StringIO()
    call_command("seed_review_demo", "--count", "2", stdout=out)
    assert "dry run: would plant 2 clusters" in out.getvalue()
    assert not Tenant.objects.filter(slug="review-demo").exists()
    assert not DuplicateCluster.objects.exists()
