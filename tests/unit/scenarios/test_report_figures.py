"""The report's figures fit what they draw."""

from __future__ import annotations

import warnings

from parley.scenarios.report_html import knowledge_figure


def test_the_verdict_bars_leave_room_for_an_attack_on_more_people_than_the_audit_set():
    # reconstruction-correction attacks the training set: 700 people against an audit set of 300. The axis
    # used to stop at 1.15 x the audit set, cutting the bars and pushing their labels out of the figure
    # (matplotlib: "Tight layout not applied").
    record = {"metrics": {"attacked": 700, "undecided": 0, "correct": 454}, "sizes": {"n_audit": 300},
              "knowledge": []}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = knowledge_figure(record, [])
    assert png.startswith("data:image/png;base64,")
