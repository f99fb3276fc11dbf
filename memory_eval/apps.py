from django.apps import AppConfig


class MemoryEvalConfig(AppConfig):
    """Installed for its management commands; it has no models."""

    name = "memory_eval"
    verbose_name = "Memory evaluation"
