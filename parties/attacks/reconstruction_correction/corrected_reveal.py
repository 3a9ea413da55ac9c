"""Reconstruction correction on top of Attribute-Reveal: a noisy decode corrected to a released SP value.

Combines the two papers' attacks. A curious data center runs the
compressed-sensing reveal (Hamman et al., Thm. 2 / Alg. 2) against a
differentially private protocol; its LP decoder returns a fractional point z
whose distance from 1/2 is a confidence. It then asks the compliance party for
the SP of its base model, the value an honest audit publishes, and corrects the
rounded decode to the smallest confidence-weighted change that reproduces that
value within ``slack`` with the group sizes it assumed
(:func:`parley.parties.attacks.solvers.correction.solve_released_sp`, Ferry et al. Sec. III-C
with the query-leakage paper's signed SP).

The correction query comes after every probe, so a run sees the same probes and the same
decode as plain ``compressed-sensing`` would on the same answers. The noise on them is the
compliance party's secret, drawn per run: in a study over ``attack.name`` the two attacks'
cells are independent samples, not pairs.
"""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import Answer, Probe, Reconstruction, register_attack
from parley.parties.attacks.query_leakage.reveal import CompressedSensing, CompressedSensingParams
from parley.parties.attacks.reconstruction_correction.baseline_adversary import weights
from parley.parties.attacks.solvers.correction import solve_released_sp

__all__ = ["CorrectedCompressedSensing"]


class CorrectedCompressedSensingParams(CompressedSensingParams):
    slack: float = Field(default=0.05, ge=0.0, le=2.0,
                         description="allowed |released SP - SP under the corrected guess| "
                                     "(the attacker's noise allowance)")
    exponent: float = Field(default=4.0, gt=0.0, le=256.0, description="confidence exponent (Sec. IV-A)")


@register_attack
class CorrectedCompressedSensing(CompressedSensing[CorrectedCompressedSensingParams]):
    """Compressed-sensing reveal, then reconstruction correction to the base model's released SP."""

    name = "corrected-compressed-sensing"
    Params = CorrectedCompressedSensingParams
    summary = "compressed-sensing decode corrected to the base model's released SP (Ferry et al. on Hamman et al.)"

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        reconstruction = yield from super().run()
        base = np.asarray(self.view.require("base_predictions"), dtype=np.float64)
        answer = yield Probe("sp", base[None, :], "published fairness value of the base model")
        released = float(np.asarray(answer.values, dtype=np.float64).reshape(-1)[0])
        info = {**reconstruction.info, "released_sp": released}
        assert self.decoded is not None  # set by the parent's run
        z = self.decoded.z
        if z is None:  # the decoder returned no fractional point: nothing to weigh the guesses with
            return Reconstruction(reconstruction.indices, reconstruction.a_hat, reconstruction.decided,
                                  reconstruction.queries + 1, {**info, "correction_status": "no-fractional-point"})
        confidence = weights(np.abs(1.0 - 2.0 * np.clip(z, 0.0, 1.0)), self.params.exponent)
        fixed = solve_released_sp(reconstruction.a_hat, confidence, base, released, self.params.slack,
                                  int(info["N1"]))
        info.update(correction_status=fixed.status, correction_changed=fixed.changed)
        return Reconstruction(reconstruction.indices, fixed.a.astype(np.int8), reconstruction.decided,
                              reconstruction.queries + 1, info)
