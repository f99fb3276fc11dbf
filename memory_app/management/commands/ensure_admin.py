from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create a superuser 'admin' when none exists (password from ADMIN_PASSWORD or generated and "
        "printed once). Used by the quick start; does nothing when a superuser exists."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        if user_model.objects.filter(is_superuser=True).exists():
            self.stdout.write("A superuser exists; log in with it (or: manage.py changepassword admin).")
            return
        password = os.environ.get("ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        user_model.objects.create_superuser("admin", "admin@localhost", password)
        shown = "from ADMIN_PASSWORD" if os.environ.get("ADMIN_PASSWORD") else password
        self.stdout.write(f"Admin login: user 'admin', password {shown} (shown once).")
