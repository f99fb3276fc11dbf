"""What the admin's view mixins are mixed into, told to the type checker.

The mixins (lineage and undo pages, the cluster review page, service-backed saves) call ModelAdmin
methods such as `has_change_permission` that only the final class has. For mypy they derive from
ModelAdmin; at run time from object, so the admin classes' method order stays as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin

if TYPE_CHECKING:
    AdminMixinBase = admin.ModelAdmin[Any]
else:
    AdminMixinBase = object
