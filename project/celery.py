"""The Celery app. Redis is the broker; without CELERY_BROKER_URL tasks run inline."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("memory")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
