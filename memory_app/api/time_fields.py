"""The request fields and the response field of time in a query, shared by search and the context
endpoints (selectors/search/time_window.py applies them)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory_app.selectors.search.time_window import TIME_MODES, TimeQuery


class QueryTimeFields(serializers.Serializer):
    """Mixed into an input serializer before StrictSerializer."""

    now = serializers.DateTimeField(
        required=False,
        help_text="the time a relative expression in the query is read against (default: the server's)",
    )
    query_time = serializers.ChoiceField(
        choices=TIME_MODES,
        required=False,
        help_text=(
            "a time expression in the query ('yesterday', 'last week', 'in May') names a window of "
            "event dates: boost the memories dated in it, filter to them, or off "
            "(default SEARCH_QUERY_TIME)"
        ),
    )


class TimeWindowSerializer(serializers.Serializer):
    start = serializers.DateTimeField(help_text="first instant of the window (inclusive)")
    end = serializers.DateTimeField(help_text="end of the window (exclusive)")
    expression = serializers.CharField(help_text="the query's words that named it")
    period = serializers.ChoiceField(choices=["day", "week", "month", "season", "year"])
    applied = serializers.ChoiceField(choices=["boost", "filter"])


def time_window_field() -> TimeWindowSerializer:
    return TimeWindowSerializer(
        allow_null=True, help_text="the window of event dates the query's time expression named, or null"
    )


def time_query_from(values: dict[str, Any]) -> TimeQuery:
    return TimeQuery(now=values.get("now"), mode=values.get("query_time"))
