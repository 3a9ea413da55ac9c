"""The parties of a fairness audit as plain classes; :mod:`parley.parties.ray` runs them on Ray."""

if __name__ != "parley.parties":  # the folder imported by its own name, from the repository root
    raise ImportError(f"import parley.parties, not {__name__} (the folder installs as parley.parties)")
