"""Scenarios: specs, data sets, runner, studies, reports and the ``parley`` command."""
