"""The parties of a fairness audit as plain classes; :mod:`parties.actors` runs them on Ray."""
