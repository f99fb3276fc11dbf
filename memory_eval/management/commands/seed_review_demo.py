from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_app.management.commands._ops import add_apply_argument
from memory_app.models import Tenant
from memory_app.services.api_keys import tenant_create
from memory_eval.review_demo import review_demo_seed


class Command(BaseCommand):
    help = (
        "Plant realistic duplicate clusters in the review queue (duplicates, updates, look-alikes, "
        "a split case) so an operator can practise in the admin. Creates the tenant if needed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--tenant", metavar="SLUG", default="review-demo", help="tenant (default: review-demo)"
        )
        parser.add_argument("--count", type=int, default=20, help="clusters to plant (default: 20)")
        add_apply_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        count = max(1, min(int(options["count"]), 1000))
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if not options["apply"]:
            where = f"tenant {slug!r}" + (" (to be created)" if tenant is None else "")
            self.stdout.write(f"dry run: would plant {count} clusters in {where}; --apply plants them")
            return
        created = tenant is None
        if tenant is None:
            tenant = tenant_create(name=slug.replace("-", " ").title(), slug=slug)
        clusters = review_demo_seed(tenant=tenant, count=count)
        self.stdout.write(
            f"Planted {len(clusters)} clusters for tenant {tenant.name!r}"
            f"{' (created)' if created else ''}. Review them at /admin/memory_app/duplicatecluster/"
        )
