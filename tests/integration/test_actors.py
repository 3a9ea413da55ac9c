"""The same refusals through real Ray actors: the compliance actor refuses and keeps serving."""

from __future__ import annotations

import time

import numpy as np
import pytest
import ray

from parley.parties import wire
from parley.parties.adversary import Adversary
from parley.parties.attacks import AttackerView, get_attack
from parley.parties.party import REFUSAL, check_reply
from parley.parties.ray.deployment import RayDeployment
from parley.parties.ray.hosts import HOST_PREFIX
from parley.protocols.errors import AttackError, ParleyError
from parley.protocols.metrics import statistical_parity_difference
from tests.party_world import deploy_compliance, hostile_envelopes, query

pytestmark = pytest.mark.ray


@pytest.fixture
def ray_world(ray_session, identities, keyring, audit_arrays):
    deployment = deploy_compliance(RayDeployment(), identities, keyring, audit_arrays)
    yield deployment
    deployment.shutdown()


def test_compliance_actor_refuses_each_hostile_envelope_and_keeps_answering(ray_world, identities, keyring,
                                                                           audit_arrays):
    a, _ = audit_arrays
    dc = identities["data-center"]
    replayed = query(dc, np.full((1, 40), 0.25), query_id="first")
    assert ray_world.call("compliance", "receive", replayed).kind == "metric-answer"
    cases = hostile_envelopes(identities) + [("replay", replayed, wire.REPLAY)]
    for i, (name, envelope, reason) in enumerate(cases):
        reply = ray_world.call("compliance", "receive", envelope)
        assert reply.kind == REFUSAL and reply.payload["reason"] == reason, name
        H = np.vstack([np.linspace(0, 1, 40), np.full(40, 0.5)])
        answer = check_reply(ray_world.call("compliance", "receive", query(dc, H, query_id=f"ok-{i}")),
                             keyring, "data-center", "metric-answer")
        np.testing.assert_array_equal(answer.payload["values"], statistical_parity_difference(H, a))
    assert ray_world.call("compliance", "stats")["refusals_sent"] == len(cases)


def test_party_errors_cross_the_actor_boundary_with_their_type(ray_session, identities, keyring):
    deployment = RayDeployment()
    view = AttackerView(n=10, base_predictions=np.zeros(10, np.int8), base_scores=np.zeros(10))
    attack = get_attack("double-query")(None, view, np.random.default_rng(0))
    deployment.add("adversary", Adversary, identities["data-center"], keyring, attack, "compliance", "raw")
    try:
        with pytest.raises(AttackError, match="has not finished") as exc:
            deployment.call("adversary", "outcome")
        assert isinstance(exc.value, ParleyError)
    finally:
        deployment.shutdown()


def test_booted_hosts_serve_their_slots_and_end_with_the_deployment(ray_session, identities, keyring, audit_arrays):
    """``boot`` starts hosts ahead of their parties: a party added later loads into its slot's booted host, and
    shutdown kills every booted host, the one never loaded too (none is left running)."""
    deployment = RayDeployment()
    deployment.boot(["compliance", "spare"])
    booted = dict(deployment.hosts)
    assert sorted(booted) == ["compliance", "spare"]
    deploy_compliance(deployment, identities, keyring, audit_arrays)
    assert deployment.hosts["compliance"] is booted["compliance"]
    a, _ = audit_arrays
    H = np.full((1, a.size), 0.5)
    answer = check_reply(deployment.call("compliance", "receive", query(identities["data-center"], H)), keyring,
                         "data-center", "metric-answer")
    np.testing.assert_array_equal(answer.payload["values"], statistical_parity_difference(H, a))
    deployment.shutdown()
    assert deployment.hosts == {}
    # ray.kill returns before the actor is dead (an idle host may still answer a moment): wait, with a deadline
    deadline = time.monotonic() + 120
    alive = dict(booted)
    while alive and time.monotonic() < deadline:
        for slot, handle in list(alive.items()):
            try:
                ray.get(handle.__ray_ready__.remote(), timeout=10)
            except ray.exceptions.RayActorError:
                del alive[slot]
            except ray.exceptions.GetTimeoutError:  # neither answering nor known dead yet: ask again
                pass
        time.sleep(0.2)
    assert alive == {}


def test_a_world_over_ray_boots_every_host_its_run_will_load(ray_session, tmp_path):
    """Before the data loads, the world has started the hosts of the compliance party, the data center and the
    slots its flow names (here the curious data center's adversary): none is started later, on the critical path."""
    from parley.scenarios.catalog import scenario_path
    from parley.scenarios.spec import Scenario
    from parley.scenarios.world import build_world

    scenario = Scenario.from_toml(scenario_path("adult-raw-single-query")).with_values(
        {"backend": "ray", "dataset.train_size": 500, "dataset.audit_size": 100})
    world = build_world(scenario, tmp_path, None, None, None)
    try:
        assert sorted(world.deployment.hosts) == ["adversary", "compliance", "data-center"]
    finally:
        world.transcript.abort()
        world.deployment.shutdown()


def test_a_world_that_fails_to_build_leaves_no_host_running(ray_session, tmp_path):
    """The hosts boot before the data loads; when the data cannot be split the build shuts them down again,
    even while the error's traceback (which holds the build's frame, and so its deployment) is still kept."""
    from parley.protocols.errors import ConfigError
    from parley.scenarios.catalog import scenario_path
    from parley.scenarios.spec import Scenario
    from parley.scenarios.world import build_world

    def hosts_alive() -> set[str]:
        return {actor["name"] for actor in ray.util.list_named_actors(all_namespaces=True)
                if actor["name"].startswith(HOST_PREFIX)}

    before = hosts_alive()
    scenario = Scenario.from_toml(scenario_path("adult-raw-single-query")).with_values(
        {"backend": "ray", "dataset.audit_size": 10**6})
    with pytest.raises(ConfigError, match="leaves no training rows") as failure:
        build_world(scenario, tmp_path, None, None, None)
    assert failure.tb is not None  # kept until the end of the test, as a REPL keeps the last traceback
    deadline = time.monotonic() + 120  # ray.kill returns before the GCS has marked the actor dead
    while hosts_alive() - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert hosts_alive() - before == set()
