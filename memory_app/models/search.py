from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory_app.models.tenancy import Tenant


class ScopeField(models.TextChoices):
    USER = "user_id", "User"
    NAMESPACE = "namespace", "Namespace"


class SearchScopeIndex(models.Model):
    """A partial HNSW index holding one very large search scope, made by `search_indexes_sync`.

    A shared HNSW index loses recall under a filter matching a few percent of the table; an index
    holding only the scope's rows does not. Its predicate is `tenant_id = T AND <field> = '<value>'`
    (a user across namespaces, or a whole namespace), which every query naming that user or
    namespace implies, so PostgreSQL can use it. The row tells the search planner which scopes
    have one and lets the sync drop indexes whose scope shrank.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="search_scope_indexes")
    field = models.CharField(max_length=16, choices=ScopeField.choices)
    value = models.CharField(max_length=255)
    index_name = models.CharField(max_length=63)
    rows = models.IntegerField(help_text="rows in the scope when the sync last counted them")
    created_at = models.DateTimeField(default=timezone.now)
    checked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # One index per scope; also the planner's lookup by (tenant, field, value).
            models.UniqueConstraint(fields=["tenant", "field", "value"], name="scopeindex_scope_unique"),
            models.UniqueConstraint(fields=["index_name"], name="scopeindex_name_unique"),
            models.CheckConstraint(condition=Q(field__in=ScopeField.values), name="scopeindex_field_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.index_name} ({self.field}={self.value}, {self.rows} rows)"
