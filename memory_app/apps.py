from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memory_app"
    verbose_name = "Agent memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory_app import tasks  # noqa: F401  (registers the Celery tasks in every process)
        from memory_app.api.schema import schema_extensions_load

        schema_extensions_load()
        self.word_model_connect()
        self.requests_count()
        self.timestamps_fast()

    @staticmethod
    def timestamps_fast() -> None:
        """Every new PostgreSQL connection reads timestamptz with Python's C parser (db/timestamps.py)."""
        from django.db.backends.signals import connection_created

        from memory_app.db.timestamps import timestamps_fast_install

        connection_created.connect(timestamps_fast_install, dispatch_uid="timestamps-fast")

    @staticmethod
    def requests_count() -> None:
        """The embedding batcher waits for companions only while other requests are in progress."""
        from django.core.signals import request_finished, request_started

        from memory_app.embeddings.batching import REQUESTS_IN_FLIGHT

        request_started.connect(REQUESTS_IN_FLIGHT.started, dispatch_uid="requests-in-flight-started")
        request_finished.connect(REQUESTS_IN_FLIGHT.finished, dispatch_uid="requests-in-flight-finished")

    @staticmethod
    def word_model_connect() -> None:
        """The judge's word alignment runs the embeddings package's local model, and the local
        model's passes hand their token vectors to the judge's encoder: wired here, the one module
        above both, so that the judge (a pure package) imports no embeddings and neither imports
        the other (pyproject.toml's import contracts)."""
        # Here, not at the top: the embeddings package imports the models, loadable only now.
        from memory_app.embeddings.local import forward_pass_listen, local_word_model
        from memory_app.judge.signals.alignment import offer_forward_pass, word_model_use

        word_model_use(local_word_model)
        forward_pass_listen(offer_forward_pass)
