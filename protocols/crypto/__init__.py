"""The cryptographic arithmetic of the secure protocols: pure functions and small classes, no parties, no Ray.

:mod:`parley.protocols.crypto.ckks` is the CKKS arithmetic of ``he`` (the parameters, the packing, the weights,
the masked and noise-flooded answers, the querier's keys); :mod:`parley.protocols.crypto.shamir` the Shamir, PRSS
and GF(p) arithmetic of ``mpc`` and ``mpc-dp`` (the sharings, the output shares, their opening). The protocols
that run them are :mod:`parley.protocols.mechanisms.homomorphic` and :mod:`parley.protocols.mechanisms.secure`.
"""
