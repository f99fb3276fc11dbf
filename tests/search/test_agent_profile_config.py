"""AgentProfile.config: one typed object read by the store and the search paths, validated on save."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memory_app.admin.tenancy import AgentProfileForm
from memory_app.judge.calibration.params import load_calibration
from memory_app.models import AgentProfile
from memory_app.models.agent_config import AgentProfileConfig
from memory_app.overrides import StoreOverrides
from memory_app.selectors.search.options import profile_overrides as search_overrides
from memory_app.services.store.config import profile_overrides as store_overrides
from memory_app.services.store.config import resolve_dedup_config
from tests.factories import TenantFactory


def test_sections_are_read_by_their_own_path() -> None:
    config = AgentProfileConfig.parse(
        {
            "store": {"candidate_radius": 0.3, "judge": "llm"},
            "search": {"deduplicate": False, "mmr_lambda": 0.7},
        }
    )
    assert (config.store.candidate_radius, config.store.judge, config.store.deduplicate) == (0.3, "llm", None)
    assert config.search.given() == {"deduplicate": False, "mmr_lambda": 0.7}
    assert config.rejected == ()


def test_a_config_without_sections_is_read_from_the_top_level_by_both_paths() -> None:
    config = AgentProfileConfig.parse({"deduplicate": False, "review_below": 0.9, "mmr": True})
    assert (config.store.deduplicate, config.store.review_below) == (False, 0.9)
    assert config.search.given() == {"deduplicate": False, "mmr": True}


def test_invalid_values_are_left_out_and_listed() -> None:
    config = AgentProfileConfig.parse({"candidate_radius": "wide", "search": {"dbscan_min_points": True}})
    assert config.store.candidate_radius is None
    assert config.search.dbscan_min_points is None
    assert {(s, k) for s, k, _v, _m in config.rejected} == {
        ("store", "candidate_radius"),
        ("search", "dbscan_min_points"),
    }


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([], "must be a JSON object"),
        ({"radius": 1}, "radius: unknown key"),
        ({"search": {"mmr_lamda": 0.5}}, "search.mmr_lamda: unknown key"),
        ({"store": "llm"}, "store: must be a JSON object"),
        ({"store": {"judge": "gpt"}}, "store.judge: must be one of offline, llm"),
        ({"review_below": 1.5}, "review_below: must be between 0 and 1"),
        ({"search": {"clustering": "yes"}}, "search.clustering: must be true or false"),
    ],
)
def test_errors_name_the_key_and_the_problem(raw: object, expected: str) -> None:
    assert expected in AgentProfileConfig.errors(raw)


def test_a_valid_config_has_no_errors() -> None:
    assert AgentProfileConfig.errors({"store": {"deduplicate": True}, "search": {"half_life_days": 30}}) == []
    assert AgentProfileConfig.errors({}) == []


@pytest.mark.django_db
def test_the_model_refuses_an_invalid_config_on_full_clean() -> None:
    profile = AgentProfile(tenant=TenantFactory(), agent_id="bot", config={"search": {"mmr_lambda": 3}})
    with pytest.raises(ValidationError) as caught:
        profile.full_clean()
    assert caught.value.message_dict["config"] == ["search.mmr_lambda: must be between 0 and 1"]
    profile.config = {"search": {"mmr_lambda": 0.3}}
    profile.full_clean()


@pytest.mark.django_db
def test_the_admin_form_shows_the_config_errors_and_saves_nothing() -> None:
    tenant = TenantFactory()
    data = {"tenant": tenant.pk, "agent_id": "bot", "name": "", "config": '{"judge": "gpt"}'}
    form = AgentProfileForm(data=data)
    assert not form.is_valid()
    assert form.errors["config"] == ["judge: must be one of offline, llm"]
    assert not AgentProfile.objects.exists()


@pytest.mark.django_db
def test_the_admin_add_form_saves_a_profile_without_a_typed_timestamp(client) -> None:
    from django.contrib.auth import get_user_model

    tenant = TenantFactory()
    client.force_login(get_user_model().objects.create_superuser("op", "op@example.com", "pw"))
    page = client.get("/admin/memory_app/agentprofile/add/")
    assert page.status_code == 200 and b'name="created_at' not in page.content
    data = {"tenant": tenant.pk, "agent_id": "bot", "name": "Bot", "config": '{"search": {"mmr": true}}'}
    response = client.post("/admin/memory_app/agentprofile/add/", data)
    assert response.status_code == 302, response.content[:2000]
    profile = AgentProfile.objects.get(tenant=tenant, agent_id="bot")
    assert profile.config == {"search": {"mmr": True}} and profile.created_at is not None


@pytest.mark.django_db
def test_store_and_search_read_the_same_profile() -> None:
    tenant = TenantFactory()
    AgentProfile.objects.create(
        tenant=tenant,
        agent_id="bot",
        config={"store": {"deduplicate": False}, "search": {"clustering": True}},
    )
    assert store_overrides(tenant=tenant, agent_id="bot") == {"deduplicate": False}
    assert search_overrides(tenant=tenant, agent_id="bot") == {"clustering": True}
    assert store_overrides(tenant=tenant, agent_id="nobody") == {}


@pytest.mark.django_db
def test_store_overrides_layer_the_call_over_the_profile_over_the_calibration() -> None:
    tenant = TenantFactory()
    AgentProfile.objects.create(
        tenant=tenant, agent_id="bot", config={"store": {"review_below": 0.9, "judge": "llm"}}
    )
    model = "all-MiniLM-L6-v2"
    from_profile = resolve_dedup_config(tenant=tenant, agent_id="bot", options=None, model=model)
    assert (from_profile.review_below, from_profile.judge) == (0.9, "llm")
    called = resolve_dedup_config(
        tenant=tenant, agent_id="bot", options=StoreOverrides(review_below=0.95), model=model
    )
    assert (called.review_below, called.judge) == (0.95, "llm")
    plain = resolve_dedup_config(tenant=tenant, agent_id="nobody", options=None, model=model)
    assert plain.review_below == load_calibration(model).review_below
