"""`GET /api/v1/stats` (counts per kind, review backlog) and `GET /api/v1/stats/embeddings` (the
embedding cache's counters)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.consistency import CONSISTENCY_PARAMETER, ConsistencyParamsSerializer
from memory_app.api.serializers import ErrorSerializer
from memory_app.db_routing import run_read
from memory_app.selectors.stats.counts import stats_get
from memory_app.selectors.stats.embeddings import embedding_stats


class EmbeddingStatsFilterSerializer(ConsistencyParamsSerializer):
    model = serializers.CharField(required=False, max_length=200)


class EmbeddingModelStatsSerializer(serializers.Serializer):
    model = serializers.CharField()
    exact_hits = serializers.IntegerField()
    normalized_hits = serializers.IntegerField()
    near_hits = serializers.IntegerField()
    misses = serializers.IntegerField()
    provider_calls = serializers.IntegerField()
    tokens_embedded = serializers.IntegerField()
    tokens_avoided = serializers.IntegerField()
    lookups = serializers.IntegerField()
    hit_rate = serializers.FloatField()
    estimated_cost_saved = serializers.FloatField()
    price_per_1k_tokens = serializers.FloatField()
    cache_entries = serializers.IntegerField()
    updated_at = serializers.CharField(allow_null=True)


class EmbeddingStatsOutputSerializer(serializers.Serializer):
    models = EmbeddingModelStatsSerializer(many=True)


class EmbeddingStatsApi(APIView):
    """`GET /api/v1/stats/embeddings`: this tenant's embedding-cache counters per model (its cache
    is its own; service-wide figures are for staff, in the admin and the commands)."""

    @extend_schema(
        parameters=[EmbeddingStatsFilterSerializer, CONSISTENCY_PARAMETER],
        responses={200: EmbeddingStatsOutputSerializer, 400: ErrorSerializer, 401: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        params = EmbeddingStatsFilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        tenant, model = tenant_of(request), params.validated_data.get("model")
        rows = run_read(
            lambda: embedding_stats(tenant=tenant, model=model),
            consistency=params.validated_data["consistency"],
        )
        return Response(EmbeddingStatsOutputSerializer({"models": [r.as_dict() for r in rows]}).data)


class StatsApi(APIView):
    """`GET /api/v1/stats?user_id=&session_id=`: counts per kind, procedures, sessions, review backlog."""

    class StatsParamsSerializer(ConsistencyParamsSerializer):
        user_id = serializers.CharField(required=False, max_length=255)
        session_id = serializers.CharField(required=False, max_length=255)

    class StatsOutputSerializer(serializers.Serializer):
        scope = serializers.DictField()
        memories = serializers.DictField()
        knowledge_base = serializers.DictField()
        procedural = serializers.DictField()
        short_term = serializers.DictField()
        review_backlog = serializers.IntegerField()

    @extend_schema(
        parameters=[StatsParamsSerializer, CONSISTENCY_PARAMETER],
        responses={200: StatsOutputSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        params = self.StatsParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        consistency = values.pop("consistency")
        tenant = tenant_of(request)
        report = run_read(lambda: stats_get(tenant=tenant, **values), consistency=consistency)
        return Response(self.StatsOutputSerializer(report).data)
