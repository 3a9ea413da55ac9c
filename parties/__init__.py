"""The parties of a fairness audit as plain classes; :mod:`parley.parties.ray` runs them on Ray."""
