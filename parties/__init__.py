"""The parties of a fairness audit as plain classes; :mod:`parley.parties.actors` runs them on Ray."""
