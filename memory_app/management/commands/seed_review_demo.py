from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_app.models import Tenant
from memory_app.services.api_keys import tenant_create
from memory_app.services.review.demo import review_demo_seed


class Command(BaseCommand):
    help = (
        "Plant realistic duplicate clusters in the review queue (duplicates, updates, look-alikes, "
        "a split case) so an operator can practise in the admin. Creates the tenant if needed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", default="review-demo", help="tenant slug (default: review-demo)")
        parser.add_argument("--count", type=int, default=20, help="clusters to plant (default: 20)")

    def handle(self, *args: Any, **options: Any) -> None:
        count = max(1, min(int(options["count"]), 1000))
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        created = tenant is None
        if tenant is None:
            tenant = tenant_create(name=slug.replace("-", " ").title(), slug=slug)
        clusters = review_demo_seed(tenant=tenant, count=count)
        self.stdout.write(
            f"Planted {len(clusters)} clusters for tenant {tenant.name!r}"
            f"{' (created)' if created else ''}. Review them at /admin/memory_app/duplicatecluster/"
        )
