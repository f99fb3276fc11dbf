"""The Django admin. Importing these modules registers their ModelAdmins with admin.site."""

import memory_app.admin.memories.admins
import memory_app.admin.operations
import memory_app.admin.review.admins
import memory_app.admin.tenancy  # noqa: F401
