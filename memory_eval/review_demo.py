"""Planted review clusters, so an operator can learn the review screens on realistic cases
(`manage.py seed_review_demo`). Every memory is stored with its real embedding."""

from __future__ import annotations

import datetime as dt
import secrets

import numpy as np
from django.db import transaction
from django.utils import timezone

from memory_app.embeddings import embed_texts, embedding_model_name
from memory_app.models import DuplicateCluster, Tenant
from memory_app.models.review import ClusterOrigin
from memory_app.services.review.queue import review_cluster_create
from memory_app.services.rows.memories import memory_insert

# (texts oldest first, judge verdict, judge confidence, kind)
DEMO_CASES: list[tuple[list[str], str, float, str]] = [
    (
        ["User prefers morning workouts", "The user likes to work out in the morning"],
        "duplicate",
        0.96,
        "episodic",
    ),
    (["User's target BMI is 23", "User's target BMI is 24"], "update", 0.91, "episodic"),
    (["The espresso grinder is broken", "The espresso machine is broken"], "distinct", 0.62, "episodic"),
    (
        [
            "User is allergic to peanuts",
            "User has a peanut allergy",
            "User is allergic to peanuts and tree nuts",
        ],
        "refine",
        0.84,
        "episodic",
    ),
    (["User's dog is called Rex", "The user's dog is named Rex"], "duplicate", 0.97, "episodic"),
    (["User lives in Berlin", "User moved to Munich in March"], "update", 0.78, "episodic"),
    (
        ["User drinks two cups of coffee a day", "User drinks coffee twice daily"],
        "duplicate",
        0.93,
        "episodic",
    ),
    (
        [
            "User's sister is named Anna",
            "User has a sister called Anna",
            "User's brother is named Jonas",
            "User has a brother called Jonas",
        ],
        "duplicate",
        0.71,
        "episodic",
    ),
    (["User runs 5 km every Saturday", "User runs 10 km every Saturday"], "update", 0.88, "episodic"),
    (["User is vegetarian", "User follows a vegetarian diet"], "duplicate", 0.95, "episodic"),
    (["User works as a nurse", "User works night shifts as a nurse"], "refine", 0.82, "episodic"),
    (
        ["User's resting heart rate is 62 bpm", "User's resting heart rate is 58 bpm"],
        "update",
        0.86,
        "episodic",
    ),
    (["User wants to learn Spanish", "User wants to learn Portuguese"], "distinct", 0.58, "episodic"),
    (["User's birthday is on 4 May", "User was born on May 4th"], "duplicate", 0.94, "episodic"),
    (
        ["User sleeps about seven hours a night", "User usually gets around 7 hours of sleep"],
        "duplicate",
        0.90,
        "episodic",
    ),
    (
        ["User takes vitamin D in winter", "User takes vitamin D every morning during winter"],
        "refine",
        0.80,
        "episodic",
    ),
    (["User's favourite team is Arsenal", "User supports Arsenal"], "duplicate", 0.92, "episodic"),
    (
        ["User's daughter starts school in September", "User's son starts school in September"],
        "distinct",
        0.66,
        "episodic",
    ),
    (
        ["User's weight goal is 70 kg", "User's weight goal is 68 kg", "User's weight goal is 67 kg"],
        "update",
        0.83,
        "episodic",
    ),
    (["User prefers tea over coffee", "User prefers coffee over tea"], "distinct", 0.55, "episodic"),
    (
        [
            "Normal resting heart rate is 60-100 bpm",
            "A normal resting heart rate for adults ranges from 60 to 100 beats per minute",
        ],
        "duplicate",
        0.89,
        "semantic",
    ),
]


@transaction.atomic
def review_demo_seed(
    *, tenant: Tenant, count: int = 20, now: dt.datetime | None = None
) -> list[DuplicateCluster]:
    """Store `count` clusters of planted memories (cycling through DEMO_CASES) and queue them.

    Each run uses fresh user ids, so seeding twice adds clusters instead of colliding.
    """
    now = now or timezone.now()
    run = secrets.token_hex(3)
    cases = [DEMO_CASES[i % len(DEMO_CASES)] for i in range(count)]
    vectors = embed_texts([t for texts, *_ in cases for t in texts], tenant=tenant)
    model = embedding_model_name()
    clusters = []
    offset = 0
    for i, (texts, verdict, confidence, kind) in enumerate(cases):
        vecs = vectors[offset : offset + len(texts)]
        offset += len(texts)
        scope = {"user_id": f"demo-{run}-{i + 1}" if kind == "episodic" else "", "kind": kind}
        scope["namespace"] = "health-facts" if kind == "semantic" else "default"
        start = now - dt.timedelta(days=len(texts) + i % 5, hours=i)
        memories = [
            memory_insert(
                tenant=tenant,
                text=text,
                embedding=vec,
                embedding_model=model,
                created_at=start + dt.timedelta(days=j),
                **scope,
            )
            for j, (text, vec) in enumerate(zip(texts, vecs, strict=True))
        ]
        distances = {m.pk: float(1.0 - np.dot(vecs[0], v)) for m, v in zip(memories, vecs, strict=True)}
        cluster = review_cluster_create(
            tenant=tenant,
            memory_ids=[m.pk for m in memories],
            verdict=verdict,
            confidence=confidence,
            max_distance=max(distances.values()),
            distances=distances,
            origin=ClusterOrigin.COMPACTION if i % 3 == 0 else ClusterOrigin.STORE,
            reason=f"planted by seed_review_demo (judge said {verdict})",
        )
        if cluster is not None:
            clusters.append(cluster)
    return clusters
