"""One set of conventions across the management commands: a command that changes data is a dry run
unless given --apply, and a tenant is always `--tenant SLUG`."""

from __future__ import annotations

import argparse

import pytest
from django.core.management import get_commands, load_command_class

# Commands that change stored data in bulk. Issuing and revoking credentials (create_tenant,
# create_api_key, revoke_api_key, ensure_admin) act at once: their argument names the one thing.
CHANGES_DATA = (
    "compact",
    "expire_memories",
    "import_memories",
    "install_schedule",
    "load_knowledge",
    "rebuild_indexes",
    "reindex",
    "search_indexes",
    "seed_review_demo",
)


OUR_APPS = ("memory_app", "memory_eval")


def ours() -> list[str]:
    return sorted(name for name, app in get_commands().items() if app in OUR_APPS)


def options(name: str) -> dict[str, argparse.Action]:
    parser = load_command_class(get_commands()[name], name).create_parser("manage.py", name)
    return {flag: action for action in parser._actions for flag in action.option_strings}


@pytest.mark.parametrize("name", CHANGES_DATA)
def test_a_command_that_changes_data_acts_only_with_apply(name: str):
    apply = options(name).get("--apply")
    assert apply is not None and apply.default is False


@pytest.mark.parametrize("name", ours())
def test_every_tenant_option_is_named_by_its_slug(name: str):
    tenant = options(name).get("--tenant")
    assert tenant is None or tenant.metavar == "SLUG"
