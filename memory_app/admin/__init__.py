from memory_app.admin import memories, operations, tenancy  # noqa: F401
