"""Floating-point attacks on noisy releases (Mironov, CCS 2012, Sec. 4), against numpy's samplers.

numpy's ``Generator.laplace(loc, scale)`` draws U = k 2^-53 (k a 53-bit integer)
and returns ``loc + scale*log(2U)`` for U < 1/2, else ``loc - scale*log(2 - 2U)``,
each step rounded to a double. Given a release y and a candidate input x, the
attacker inverts the formula to the few k that could have produced y and
recomputes the sampler on each, bit for bit: if no k gives exactly y, the input
was not x. For neighbouring inputs (x and x + Delta) a large share of releases
is possible under one input only, which breaks epsilon-DP outright (Sec. 4).

:func:`possible_additive` generalises the replay to any release of the form
``fl(x + fl(s * Z))`` -- the laplace protocol's ``x + laplace(0, s)`` and the
smooth protocols' ``x + s * Z`` with Z from ``laplace(0, 1)`` or
``standard_cauchy``, all with their float-unsafe sampler: it enumerates the
doubles n with fl(x + n) = y, the doubles Z with fl(s Z) = n, and asks whether
the sampler can output one of those Z. For ``standard_cauchy`` (a ratio of two
ziggurat normals) it assumes every double is possible, which only makes
"impossible" rarer, so a release it calls impossible is impossible.

:func:`lattice_possible` is the same question for the lattice samplers of
:mod:`parley.protocols.dp.lattice`: their releases are the multiples of a public
power of two g, whatever the input.

An event built from these, E = {y : y impossible under the neighbour}, is fixed
before any release is drawn and is empty in exact arithmetic (both inputs can
produce every real number); :func:`event_lower_bound` turns the counts of E
under the two inputs into a Clopper-Pearson lower bound on epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from parley.protocols.audit.privacy_audit import clopper_pearson

__all__ = ["possible", "distinguish", "possible_additive", "numpy_laplace_z", "any_double",
           "lattice_possible", "event_lower_bound"]

#: k candidates tried on each side of the inverted value.
WINDOW = 24
#: Doubles n with fl(x + n) = y tried before the replay gives up and calls y possible.
MAX_SUMMANDS = 64


def possible(y: float, x: float, scale: float) -> bool:
    """Can numpy's textbook sampler output exactly ``y`` from ``loc=x``? (libm ``log``, as numpy's C code.)

    The expressions are numpy's, operation for operation, so each candidate
    release is reproduced bit for bit (checked: ``possible_under_truth`` is 1).
    """
    z = (y - x) / scale
    candidates = []
    if z <= 0.0:  # branch U < 1/2: y = x + scale * log(2U), 2U = k 2^-52
        candidates.append((math.exp(z) * 2.0**52, lambda k: x + scale * math.log(k * 2.0**-52)))
    if z >= 0.0:  # branch U >= 1/2: y = x - scale * log(2 - 2U), 2 - 2U = 2 - k 2^-52
        # numpy computes 2.0 - U - U, whose first subtraction rounds: recompute it the same way.
        candidates.append(((2.0 - math.exp(-z)) * 2.0**52,
                           lambda k: x - scale * math.log(2.0 - k * 2.0**-53 - k * 2.0**-53)))
    for center, forward in candidates:
        k0 = int(center)
        for k in range(max(1, k0 - WINDOW), min(2**53 - 1, k0 + WINDOW) + 1):
            # U = k 2^-53 must fall in the branch's half
            if ((k < 2**52) == (z <= 0.0) or z == 0.0) and forward(k) == y:
                return True
    return False


def distinguish(releases: np.ndarray, x_true: float, x_other: float, scale: float) -> dict[str, float]:
    """Share of releases the attack pins on the true input (possible under it, impossible under the other)."""
    own = np.array([possible(float(y), x_true, scale) for y in releases])
    other = np.array([possible(float(y), x_other, scale) for y in releases])
    return {"releases": int(releases.size), "possible_under_truth": float(own.mean()),
            "ruled_out_other": float((own & ~other).mean())}


def numpy_laplace_z(z: float) -> bool:
    """Can ``Generator.laplace(0, 1)`` return exactly ``z``? (-log(2U) branches as in :func:`possible`.)"""
    if z <= 0.0:  # z = log(2U), 2U = k 2^-52, k < 2^52
        k0 = int(math.exp(z) * 2.0**52)
        return any(math.log(k * 2.0**-52) == z for k in range(max(1, k0 - WINDOW), min(2**52 - 1, k0 + WINDOW) + 1))
    k0 = int((2.0 - math.exp(-z)) * 2.0**52)  # z = -log(2 - U - U), U = k 2^-53, k >= 2^52
    return any(-math.log(2.0 - k * 2.0**-53 - k * 2.0**-53) == z
               for k in range(max(2**52, k0 - WINDOW), min(2**53 - 1, k0 + WINDOW) + 1))


def any_double(z: float) -> bool:
    """Over-approximation of ``standard_cauchy``'s outputs: every finite double."""
    return math.isfinite(z)


def _run(start: float, inside: Callable[[float], bool], limit: int) -> list[float] | None:
    """The contiguous run of doubles around ``start`` (within 4 steps) where ``inside`` holds; None if > limit."""
    seed = next((v for v in _around(start, 4) if inside(v)), None)
    if seed is None:
        return []
    run = [seed]
    for direction in (-math.inf, math.inf):
        v = math.nextafter(seed, direction)
        while inside(v):
            run.append(v)
            if len(run) > limit:
                return None
            v = math.nextafter(v, direction)
    return run


def _around(v: float, steps: int) -> list[float]:
    out, lo, hi = [v], v, v
    for _ in range(steps):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        out += [lo, hi]
    return out


def possible_additive(y: float, x: float, s: float, z_possible: Callable[[float], bool]) -> bool:
    """Can ``fl(x + fl(s * Z))`` equal ``y`` for some Z the sampler can output? (Sound when it says no.)"""
    summands = _run(y - x, lambda n: x + n == y, MAX_SUMMANDS)
    if summands is None:  # |n| far below ulp(y): too many candidates to replay; count y as possible
        return True
    for n in summands:
        zs = _run(n / s, lambda z, n=n: s * z == n, 16)
        if zs is None or any(z_possible(z) for z in zs):
            return True
    return False


def lattice_possible(y: float, g: float) -> bool:
    """Can a lattice sampler of spacing g (a power of two) release ``y``? Every multiple of g can."""
    return math.isfinite(y) and (y / g) == math.floor(y / g)


def event_lower_bound(hits: int, hits_other: int, runs: int, alpha: float) -> float:
    """ln(p_low / q_high), floored at 0: a (1 - alpha) lower bound on epsilon from one fixed event.

    ``hits`` of ``runs`` releases of one input fell in E, ``hits_other`` of the
    neighbour's; Clopper-Pearson limits with alpha/2 each, as the privacy auditor
    (:mod:`parley.protocols.audit.privacy_audit`) does, so the bound holds with
    probability at least 1 - alpha.
    """
    p_low, _ = clopper_pearson(hits, runs, alpha / 2)
    _, q_high = clopper_pearson(hits_other, runs, alpha / 2)
    if p_low <= 0.0:
        return 0.0
    return max(0.0, math.log(p_low / q_high))


# -- the campaign: an exact-arithmetic-empty event against each DP protocol ---------------

#: The audit set: n = 5, person 0 changes group between the neighbours; the probe accepts only person 0.
A = np.array([0, 0, 1, 1, 1], dtype=np.int8)
A_PRIME = np.array([1, 0, 1, 1, 1], dtype=np.int8)
Y = np.array([1, 0, 1, 0, 1], dtype=np.int8)
PROBE = np.array([[1.0, 0.0, 0.0, 0.0, 0.0]])
#: (protocol, params without the sampler, claimed epsilon) -- the three DP protocols of the query-leakage paper.
MECHANISMS: tuple[tuple[str, dict[str, float], float], ...] = (
    ("laplace", {"epsilon": 1.0}, 1.0),
    ("smooth-cauchy", {"epsilon": 1.0}, 1.0),
    ("smooth-laplace", {"epsilon": 0.9, "delta": 1e-6}, 0.9),
)


def campaign(name: str, params: dict[str, float], sampler: str, draws: int, seed: int,
             alpha: float) -> dict[str, object]:
    """Release ``draws`` answers per neighbour and bound epsilon from the two fixed events, both directions.

    Events (fixed before drawing, from the code the attacker reads): ``float`` =
    {y impossible under the other input for the textbook float release}
    (:func:`possible_additive`), ``lattice`` = {y not a multiple of the public g}
    (:func:`lattice_possible`; skipped for ``snapping``, whose grid is not a
    power of two). Returns the counts [in E under the other input, in E under
    its own], the bound of each event and direction, and the largest.
    """
    from parley.protocols import AuditSet, MetricQuery, get_protocol
    from parley.protocols.dp.lattice import granularity
    from parley.protocols.mechanisms.smooth_sensitivity import lattice_bound
    from parley.protocols.metrics import evaluate

    cls = get_protocol(name)
    protocol = cls(cls.Params(**params, sampler=sampler))
    unsafe = cls(cls.Params(**params, sampler="float-unsafe"))  # the attacker's model of the float release
    query = MetricQuery(metric="sp", predictions=PROBE, query_id="fp")
    sides = []
    for a in (A, A_PRIME):
        audit = AuditSet(a=a, y=Y)
        exact = evaluate("sp", PROBE, a, Y)
        if name == "laplace":
            scale, z_ok = protocol.sensitivity(query, audit) / params["epsilon"], None
            g = granularity(min(scale * params["epsilon"], scale))  # min(Delta, Delta/epsilon) / m, m = 1
        else:
            scale, z_ok = unsafe.noise_scale(query, audit), (any_double if name == "smooth-cauchy" else numpy_laplace_z)
            g = granularity(lattice_bound(unsafe.factor, params["epsilon"], a.size))
        sides.append({"audit": audit, "exact": exact, "x": float(exact[0]), "s": scale, "z_ok": z_ok, "g": g})
    releases = []
    for i, side in enumerate(sides):
        rng = np.random.default_rng([seed, i])
        releases.append(np.array([protocol.release(side["exact"], query, side["audit"], rng)[0][0]
                                  for _ in range(draws)]))

    def float_possible(y: float, side: dict) -> bool:
        if side["z_ok"] is None:  # laplace: numpy computes loc + scale * log(.) itself
            return possible(y, side["x"], side["s"])
        return possible_additive(y, side["x"], side["s"], side["z_ok"])

    counts: dict[str, list[int]] = {}
    bounds: dict[str, float] = {}
    events: list[tuple[str, Callable[[float, dict], bool]]] = [("float", float_possible)]
    if sampler != "snapping":
        events.append(("lattice", lambda y, side: lattice_possible(y, side["g"])))
    for event, test in events:
        for target in (0, 1):  # E = {impossible under side `target`}; its rate under the other side vs its own
            other = 1 - target
            hits = int(sum(not test(float(y), sides[target]) for y in releases[other]))
            own = int(sum(not test(float(y), sides[target]) for y in releases[target]))
            key = f"{event}:not-{'a' if target == 0 else 'a_prime'}"
            counts[key] = [hits, own]
            bounds[key] = event_lower_bound(hits, own, draws, alpha)
    return {"protocol": name, "sampler": sampler, "draws": draws, "counts": counts, "bounds": bounds,
            "lower_bound": max(bounds.values()), "x": [s["x"] for s in sides], "g": sides[0]["g"]}
