from memory_app.admin import memories, operations, review, tenancy  # noqa: F401
