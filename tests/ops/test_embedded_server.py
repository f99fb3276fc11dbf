"""The embedded server's own settings file (project/database.py): written before the server
starts, included once from postgresql.conf, and running with what it says."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from project.database import SERVER_CONF, SHARED_BUFFERS_ARE, checked_shared_buffers, write_server_conf


def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "postgresql.conf").write_text("shared_buffers = 128MB\n# Add settings for extensions here\n")
    return tmp_path


def test_the_settings_file_is_included_once_however_often_it_is_written(tmp_path):
    folder = data_dir(tmp_path)
    assert write_server_conf(folder, shared_buffers="1GB") is True
    assert write_server_conf(folder, shared_buffers="1GB") is False
    conf = (folder / "postgresql.conf").read_text().splitlines()
    assert conf.count(f"include_if_exists = '{SERVER_CONF}'") == 1
    assert conf[0] == "shared_buffers = 128MB"  # initdb's file keeps its own lines
    assert "shared_buffers = '1GB'" in (folder / SERVER_CONF).read_text().splitlines()


def test_an_empty_size_keeps_initdbs_shared_buffers(tmp_path):
    folder = data_dir(tmp_path)
    write_server_conf(folder, shared_buffers="1GB")
    assert write_server_conf(folder, shared_buffers="") is True
    assert "shared_buffers" not in (folder / SERVER_CONF).read_text().replace("EMBEDDED_PG_*", "")


def test_a_folder_not_initialised_yet_is_left_alone(tmp_path):
    assert write_server_conf(tmp_path, shared_buffers="1GB") is False
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["1 GB", "lots", "0MB", "1gb", "-1GB", "1GB; fsync = off"])
def test_a_size_postgresql_would_not_read_is_refused(value):
    with pytest.raises(ImproperlyConfigured, match="EMBEDDED_PG_SHARED_BUFFERS must be a size"):
        checked_shared_buffers(value)


@pytest.mark.parametrize("value", ["", "512MB", "1GB", "65536kB"])
def test_sizes_postgresql_reads_are_accepted(value):
    assert checked_shared_buffers(value) == value


@pytest.mark.django_db
def test_a_fresh_embedded_server_runs_with_the_configured_shared_buffers():
    if settings.DATABASE_URL or not settings.EMBEDDED_PG_SHARED_BUFFERS:
        pytest.skip("the embedded server with its default settings is not in use")
    with connection.cursor() as cursor:
        cursor.execute(SHARED_BUFFERS_ARE, [settings.EMBEDDED_PG_SHARED_BUFFERS])
        assert cursor.fetchone()[0]
