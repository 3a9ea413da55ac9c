"""Exact discrete noise: parley's samplers (ChaCha20 and PCG64 generators) against OpenDP's, if installed.

Same run, same machine, same draws: discrete Laplace with P(y) proportional to
exp(-|y|/10) and discrete Gaussian with sigma 10, both on the integers, drawn
(a) as one call of ``--draws`` draws and (b) as ``--draws / --call`` calls of
``--call`` draws each, the way a party answers one query of m models. parley's
samplers (:mod:`parley.protocols.dp.lattice`) run over a party's generator,
ChaCha20 keyed by a :class:`PartySecret`, and over numpy's PCG64 (the old
default); OpenDP's are ``make_laplace`` / ``make_gaussian`` over a vector of
integers. Times are the best of ``--repeats``; ratios are against parley+PCG64
measured in the same run. OpenDP draws from its own CSPRNG seeded by the
operating system: its noise cannot be replayed from a ``--secrets`` file.

Run: ``python tests/benchmarks/bench_samplers_opendp.py [--draws N] [--call M] [--repeats R] [--only WHICH]``
(``--only opendp`` needs neither parley nor its dependencies). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

SCALE, SIGMA = 10, 10


def parley(generator: str) -> dict:
    from parley.parties.run_secrets import PartySecret
    from parley.protocols.dp.lattice import RandomBits, discrete_gaussian, discrete_laplace

    rng = PartySecret(bytes(32)).rng("bench") if generator == "chacha" else np.random.Generator(np.random.PCG64(0))

    def draws(sampler, *args):
        def call(k: int) -> list[int]:
            bits = RandomBits(rng)  # one per call, as laplace_lattice does
            return [sampler(bits, *args) for _ in range(k)]
        return call

    return {"laplace": draws(discrete_laplace, SCALE, 1), "gaussian": draws(discrete_gaussian, SIGMA**2, 1)}


def opendp() -> dict:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int))
    laplace = dp.m.make_laplace(space, dp.l1_distance(T=int), scale=float(SCALE))
    gaussian = dp.m.make_gaussian(space, dp.l2_distance(T=int), scale=float(SIGMA))
    return {"laplace": lambda k: laplace([0] * k), "gaussian": lambda k: gaussian([0] * k)}


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=100_000)
    parser.add_argument("--call", type=int, default=100, help="draws per call in the per-query timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("parley", "opendp"))
    args = parser.parse_args()
    samplers = {}
    if args.only != "opendp":
        samplers = {"parley+pcg64": parley("pcg64"), "parley+chacha": parley("chacha")}
    if args.only != "parley":
        try:
            samplers["opendp"] = opendp()
        except ImportError:
            print("opendp not installed: pip install opendp to compare")
    calls = args.draws // args.call
    out: dict = {"draws": args.draws, "call": args.call, "repeats": args.repeats}
    print(f"| sampler | noise | ms per {args.draws} draws (1 call) | x | ms per call of {args.call} | x |")
    print("|---|---|---|---|---|---|")
    for noise in ("laplace", "gaussian"):
        for name, sampler in samplers.items():
            draw = sampler[noise]
            one = 1e3 * best(lambda draw=draw: draw(args.draws), args.repeats)
            per = 1e3 * best(lambda draw=draw: [draw(args.call) for _ in range(calls)], args.repeats) / calls
            out[f"{name}/{noise}"] = {"ms_one_call": round(one, 2), "ms_per_call": round(per, 4)}
            ref = out.get(f"parley+pcg64/{noise}")
            ratios = (f"{one / ref['ms_one_call']:.2f}", f"{per / ref['ms_per_call']:.2f}") if ref else ("-", "-")
            print(f"| {name} | {noise} | {one:.1f} | {ratios[0]} | {per:.3f} | {ratios[1]} |", flush=True)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
