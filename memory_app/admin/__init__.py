from memory_app.admin import operations, tenancy  # noqa: F401
from memory_app.admin.memories import admins as memories  # noqa: F401
from memory_app.admin.review import admins as review  # noqa: F401
