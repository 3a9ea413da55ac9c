"""Scenarios: specs, data sets, runner, studies, reports and the ``parley`` command."""

if __name__ != "parley.scenarios":  # the folder imported by its own name, from the repository root
    raise ImportError(f"import parley.scenarios, not {__name__} (the folder installs as parley.scenarios)")
