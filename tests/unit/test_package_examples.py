"""The public API's examples that run in process, in the default tier.

tests/unit/test_package.py runs every example of ``parley``'s docstrings, the study's too, which
starts a private Ray instance (the system tier); this one runs every other example.
"""

from __future__ import annotations

import doctest

import parley

#: The example that runs on Ray: a study's workers are Ray actors.
ON_RAY = {"parley.study"}


def test_every_example_but_the_studys_passes_in_process():
    examples = [test for test in doctest.DocTestFinder().find(parley) if test.name not in ON_RAY and test.examples]
    assert {test.name for test in examples} == {"parley", "parley.run", "parley.compare", "parley.verify"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in examples:
        runner.run(test)
    outcome = runner.summarize(verbose=False)
    assert outcome.failed == 0 and outcome.attempted >= 18
