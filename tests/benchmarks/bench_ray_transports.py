"""A signed echo round trip over two Ray transports: an actor call (what parley uses) and a compiled graph.

Ray's compiled graphs (``ray.dag``, ``experimental_compile``) carry a call to an actor over
shared-memory channels set up once, instead of submitting a task each time. This benchmark measures
what the party-to-party round trip would cost over one, before parley's deployment is built on it:
the same sealed query (1 float64, then 400 x 1000 float64) answered by the same echo party
(``tests.party_world.Echo``: it verifies the query and seals the array back) and checked by the
querier, against a bare echo actor over each transport, call by call interleaved. Then the CPU time
each actor uses over a second of doing nothing: an actor that serves a compiled graph keeps reading
its channel (in Ray 2.60 it spins), and on a two-core machine that core is taken from everything else.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_ray_transports.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import time

import numpy as np
import ray
from ray.dag import InputNode

from parley.parties.party import check_reply
from parley.parties.ray.cluster import ensure_ray
from parley.parties.wire import Identity, Keyring
from tests.party_world import Echo


@ray.remote(num_cpus=0)
class BareEcho:
    def echo(self, value):
        return value

    def cpu(self) -> float:
        return time.process_time()


@ray.remote(num_cpus=0)
class EchoParty:
    def __init__(self, identity: Identity, keyring: Keyring) -> None:
        self.party = Echo(identity, keyring)

    def receive(self, envelope):
        return self.party.receive(envelope)

    def cpu(self) -> float:
        return time.process_time()


def _idle_cpu(actors: dict[str, object], seconds: float = 1.0) -> dict[str, float]:
    """CPU seconds each actor's process used while nothing was asked of it for ``seconds``."""
    before = {k: ray.get(a.cpu.remote()) for k, a in actors.items()}
    time.sleep(seconds)
    return {k: round(ray.get(a.cpu.remote()) - before[k], 3) for k, a in actors.items()}


def _compiled(method) -> object:
    with InputNode() as given:
        graph = method.bind(given)
    return graph.experimental_compile()


def main() -> None:
    logging.getLogger("ray.dag").setLevel(logging.WARNING)  # its INFO lines at teardown
    ensure_ray()
    querier, party = Identity.generate("data-center", "data-center"), Identity.generate("compliance", "compliance")
    keyring = Keyring()
    for identity in (querier, party):
        keyring.add(identity.key_entry())
    bare, bare_for_graph = BareEcho.remote(), BareEcho.remote()
    signed, signed_for_graph = EchoParty.remote(party, keyring), EchoParty.remote(party, keyring)
    bare_graph, signed_graph = _compiled(bare_for_graph.echo), _compiled(signed_for_graph.receive)
    counter = iter(range(10**9))
    results = {}
    try:
        for label, H, repeats in (("one_float", np.array([[0.5]]), 1500),
                                  ("400x1000", np.random.default_rng(0).random((400, 1000)), 200)):
            def seal(H=H):
                return querier.seal("compliance", "metric-query", "raw",
                                    {"metric": "sp", "predictions": H, "query_id": f"q{next(counter)}"})

            def check(reply):
                return check_reply(reply, keyring, "data-center", "metric-answer")

            calls = {"bare_actor": lambda H=H: ray.get(bare.echo.remote(H)),
                     "bare_graph": lambda H=H: ray.get(bare_graph.execute(H)),
                     "signed_actor": lambda: check(ray.get(signed.receive.remote(seal()))),
                     "signed_graph": lambda: check(ray.get(signed_graph.execute(seal())))}
            times: dict[str, list[float]] = {k: [] for k in calls}
            for fn in calls.values():  # warm-up
                for _ in range(30):
                    fn()
            for _ in range(repeats):
                for key, fn in calls.items():
                    start = time.perf_counter()
                    fn()
                    times[key].append(time.perf_counter() - start)
            ms = {k: round(1e3 * statistics.median(v), 3) for k, v in times.items()}
            ms["signed_graph_over_bare_actor"] = round(ms["signed_graph"] / ms["bare_actor"], 2)
            ms["signed_graph_over_bare_graph"] = round(ms["signed_graph"] / ms["bare_graph"], 2)
            ms["signed_actor_over_bare_actor"] = round(ms["signed_actor"] / ms["bare_actor"], 2)
            results[label] = ms
            print(f"{label:>10}: bare actor call {ms['bare_actor']:.3f} ms, "
                  f"bare compiled graph {ms['bare_graph']:.3f} ms; "
                  f"signed over an actor call {ms['signed_actor']:.3f} ms (x{ms['signed_actor_over_bare_actor']:.2f}), "
                  f"over a compiled graph {ms['signed_graph']:.3f} ms (x{ms['signed_graph_over_bare_actor']:.2f} of "
                  f"the bare actor call, x{ms['signed_graph_over_bare_graph']:.2f} of the bare graph)", file=sys.stderr)
        results["idle_cpu_s_per_s"] = idle = _idle_cpu({"actor": signed, "graph": signed_for_graph})
        print(f"   at rest, CPU seconds in one second: the actor {idle['actor']:.3f}, the actor serving a compiled "
              f"graph {idle['graph']:.3f}", file=sys.stderr)
    finally:
        bare_graph.teardown()
        signed_graph.teardown()
    print(json.dumps({"benchmark": "ray-transports", **results}))


if __name__ == "__main__":
    main()
