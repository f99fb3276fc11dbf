from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memory_app"
    verbose_name = "Agent memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory_app import tasks  # noqa: F401  (registers the Celery tasks in every process)
        from memory_app.api.schema import schema_extensions_load

        schema_extensions_load()
