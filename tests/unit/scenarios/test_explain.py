"""The narration of ``parley run --explain``: payload summaries and what-was-learned sentences (no Ray)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from parley.parties.confidential import SEALED
from parley.parties.transcript import TranscriptWriter
from parley.scenarios.explain import MIN_FOLD, SEALED_NOTE, describe, narrate, reconstruction_note
from parley.scenarios.words import exact_digits


def test_metric_queries_and_answers_are_summarized():
    assert describe("metric-query", {"metric": "sp", "predictions": np.zeros((2, 1000))}) == \
        "a metric query: SP of 2 models over 1,000 people"
    edit = describe("metric-query", {"metric": "sp", "edit_of": "q1", "indices": np.zeros((1, 37), np.int64),
                                     "values": np.zeros((1, 37))})
    assert edit == "a metric query: SP of the kept model with 37 predictions changed (sent as edits)"
    # An exact answer is worded to 4 significant digits (a projector), every digit on request.
    assert describe("metric-answer", {"metric": "sp", "values": np.array([0.13866721466817367])}) == \
        "an SP answer 0.1387 (exact)"
    with exact_digits():
        assert describe("metric-answer", {"metric": "sp", "values": np.array([0.13866721466817367])}) == \
            "an SP answer 0.13866721466817367 (exact)"
    assert describe("metric-answer", {"metric": "sp", "values": np.array([0.13866721466817367])}) == \
        "an SP answer 0.1387 (exact)"  # the context ended
    assert describe("metric-answer", {"metric": "abs_sp", "values": np.array([0.0213]), "decimals": 4}) == \
        "a |SP| answer 0.0213 (rounded to 4 decimals)"
    noisy = describe("metric-answer", {"metric": "eo", "values": np.linspace(-0.5, 0.5, 40), "epsilon": 1.0,
                                       "noise": "laplace"})
    assert noisy == "40 EO answers between -0.5 and 0.5 (laplace noise at ε = 1)"


def test_releases_certificates_accept_sets_and_refusals_are_summarized():
    release = describe("attribute-release", {"set": "audit", "z": np.zeros(1000, np.int8), "epsilon": 1.0,
                                              "pi": 0.731})
    assert release == ("a randomized-response release of 1,000 values of A (the audit set) at ε = 1: "
                       "each value kept with probability 0.73")
    assert describe("accept-set", {"accepted": np.arange(85), "m": 200, "rho": 0.1}) == \
        "an accept set: 85 of 200 hypotheses have covariance with A within ρ = 0.1"
    assert describe("hypothesis-query", {"predictions": np.zeros((200, 50))}) == \
        "a hypothesis query: predictions of 200 hypotheses over 50 people"
    assert describe("fairness-certificate", {"metric": "sp", "n": 30, "tolerance": 0.01}) == \
        "a fairness certificate: SP is within 0.01 over 30 people"
    decision = {"metric": "sp", "n": 30, "tolerance": 0.01, "epsilon": 1.0}
    assert describe("fairness-certificate", {**decision, "certified": True}) == \
        "a fairness certificate: SP is within 0.01 over 30 people (a noisy decision, ε = 1 debited)"
    assert describe("fairness-certificate", {**decision, "certified": False}) == \
        "no fairness certificate: SP was not found within 0.01 over 30 people (a noisy decision, ε = 1 debited)"
    assert describe("refusal", {"reason": "budget-exceeded", "detail": "epsilon 1.5 > 1"}) == \
        "a refusal (budget-exceeded): epsilon 1.5 > 1"
    assert describe("mystery", {"b": 1, "a": 2}) == "a mystery message (fields: a, b)"


def test_a_sealed_payload_is_described_by_its_size_only():
    sealed = {SEALED: {"alg": "x", "nonce": "00", "ciphertext": np.zeros(168, np.uint8)}}
    assert describe("metric-answer", sealed) == SEALED_NOTE.format(size=168)


def test_reconstruction_note_running_and_concluded():
    a = np.array([1, 1, 0, 0, 1, 0, 1, 1], dtype=np.int8)
    # Two people pinned down, one rightly: running leakage over all 8 (the rest as coin flips).
    running = reconstruction_note("the adversary", np.array([0, 2]), np.array([1, 1]), None, a)
    # credit: group 1 -> [1, .5, .5, .5, .5] = 3/5; group 0 -> [0, .5, .5] = 1/3; mean = 46.7 %
    # One of the two is wrong: the attack guessed; it did not pin anything down.
    assert "guessed A of 2 of 8 people (1 of them rightly)" in running
    assert "running leakage 46.7 %" in running
    done = reconstruction_note("the adversary", np.array([0, 2]), np.array([1, 0]), None, a, concluded=True)
    assert done.endswith("leakage 100.0 % over the 2 people it attacked")
    assert "has pinned down A of 2 of 8 people (2 of them rightly)" in done  # every decision right: pinned down
    nobody = reconstruction_note("the observer", np.empty(0, np.int64), np.empty(0, np.int8), None, a, concluded=True)
    assert nobody.endswith("it attacked no one")


def test_narrate_names_every_message_and_places_what_was_learned(identities, keyring, tmp_path):
    path = tmp_path / "transcript.jsonl"
    dc, comp = identities["data-center"], identities["compliance"]
    with TranscriptWriter(path, keyring, identities) as transcript:
        transcript.append(dc.seal("compliance", "metric-query", "raw",
                                  {"metric": "sp", "query_id": "q", "predictions": np.zeros((1, 5))}))
        transcript.append(comp.seal("data-center", "metric-answer", "raw",
                                    {"metric": "sp", "query_id": "q", "values": np.array([0.25])}))
    lines = narrate(path, [(2, "the data center knows its SP"), (0, "nothing yet"), (9, "at the end")])
    text = "\n".join(lines)
    assert lines[0] == "  before any message: nothing yet"
    assert "#1 data-center -> compliance: metric-query [raw]" in text
    assert "#2 compliance -> data-center: metric-answer [raw]" in text
    # A note after message 2, and one numbered past the end, both follow message 2.
    assert text.index("learned: the data center knows its SP") > text.index("#2 ")
    assert lines[-1].endswith("learned: at the end")


def _attack_transcript(path, keyring, identities, burst: int = 30):
    """A precision-like run: a base query and answer, then ``burst`` edit queries, then their answers."""
    dc, comp = identities["data-center"], identities["compliance"]
    rng = np.random.default_rng(0)
    with TranscriptWriter(path, keyring, identities) as transcript:
        transcript.append(dc.seal("compliance", "metric-query", "raw",
                                  {"metric": "sp", "query_id": "q0", "predictions": np.zeros((1, 1000))}))
        transcript.append(comp.seal("data-center", "metric-answer", "raw",
                                    {"metric": "sp", "query_id": "q0", "values": np.array([0.13866721466817367])}))
        for k in range(burst):
            size = 37 if k < burst - 1 else 19
            transcript.append(dc.seal("compliance", "metric-query", "raw",
                                      {"metric": "sp", "query_id": f"q{k + 1}", "edit_of": "q0",
                                       "indices": np.arange(size).reshape(1, -1), "values": np.ones((1, size))}))
        for k in range(burst):
            transcript.append(comp.seal("data-center", "metric-answer", "raw",
                                        {"metric": "sp", "query_id": f"q{k + 1}",
                                         "values": np.array([0.138 + 0.0013 * rng.random()])}))
    return 2 + 2 * burst


def test_runs_of_like_messages_fold_into_one_entry_and_keep_every_learned_sentence(identities, keyring, tmp_path):
    """Read aloud, 27 identical query lines are one line with a count; every learned sentence stays, at its place."""
    path = tmp_path / "transcript.jsonl"
    total = _attack_transcript(path, keyring, identities)
    learned = [(2, "the data center turns adversary")] + [(k, f"pinned down {k - 32} people") for k in range(33, 63)]
    lines = narrate(path, learned)
    text = "\n".join(lines)
    # No run of identical lines: each summary line differs from the one before it.
    assert all(a != b for a, b in zip(lines, lines[1:], strict=False)), text
    # The burst of queries: the first in full, the other 29 folded into one entry with their count.
    assert "  #3  data-center -> compliance: metric-query [raw]" in lines
    assert "  #4-#32 29 more like #3 (metric-query [raw])" in lines
    assert "      a metric query: SP of the kept model with 19 to 37 predictions changed (sent as edits)" in lines
    # The answers: the first in full with its sentence, the folded ones list theirs in order, the last is in full.
    assert lines[lines.index("  #33 compliance -> data-center: metric-answer [raw]") + 2] == \
        "      learned: pinned down 1 people"
    assert "  #34-#61 28 more like #33 (metric-answer [raw])" in lines
    folded = [line for line in lines if "after #" in line]
    assert folded == [f"      after #{k}, learned: pinned down {k - 32} people" for k in range(34, 62)]
    assert lines[-3] == f"  #{total} compliance -> data-center: metric-answer [raw]"  # the last one: in full
    assert lines[-1] == "      learned: pinned down 30 people"
    assert text.count("learned: ") == len(learned)
    # Answers to 4 significant digits; every digit with exact=True; the whole narration without folding.
    assert "an SP answer 0.1387 (exact)" in text and "0.13866721466817367" not in text
    assert "an SP answer 0.13866721466817367 (exact)" in "\n".join(narrate(path, learned, exact=True))
    unfolded = narrate(path, learned, fold=False)
    assert len(unfolded) == 2 * total + len(learned) and len(lines) < len(unfolded) // 2


def test_query_answer_pairs_fold_as_pairs(identities, keyring, tmp_path):
    """A targeted attack's query, answer, query, answer, ... folds into pairs that start with the query."""
    path = tmp_path / "transcript.jsonl"
    dc, comp = identities["data-center"], identities["compliance"]
    with TranscriptWriter(path, keyring, identities) as transcript:
        for k in range(12):
            transcript.append(dc.seal("compliance", "metric-query", "raw",
                                      {"metric": "sp", "query_id": f"q{k}", "edit_of": "q",
                                       "indices": np.array([[k]]), "values": np.ones((1, 1))}))
            transcript.append(comp.seal("data-center", "metric-answer", "raw",
                                        {"metric": "sp", "query_id": f"q{k}", "values": np.array([0.1 + k / 1000])}))
    lines = narrate(path, [(2 * k, f"target {k}") for k in range(1, 13)])
    assert "  #3-#22 10 more pairs like #1-#2 (metric-query and metric-answer [raw])" in lines
    assert "      an SP answer 0.101 to 0.11 (exact)" in lines
    assert [line for line in lines if "learned: " in line][1:11] == \
        [f"      after #{2 * k}, learned: target {k}" for k in range(2, 12)]
    assert "  #24 compliance -> data-center: metric-answer [raw]" in lines  # the last message is never folded


def test_too_few_like_messages_are_not_folded(identities, keyring, tmp_path):
    short = tmp_path / "short.jsonl"
    dc = identities["data-center"]
    with TranscriptWriter(short, keyring, identities) as transcript:
        for k in range(MIN_FOLD):  # too few to fold: as many messages as a fold must take in, the last one included
            transcript.append(dc.seal("compliance", "metric-query", "raw",
                                      {"metric": "sp", "query_id": f"q{k}", "predictions": np.zeros((1, 5))}))
    assert sum(line.startswith("  #") for line in narrate(short)) == MIN_FOLD


def test_narrate_refuses_a_tampered_transcript(identities, keyring, tmp_path):
    from parley.protocols.errors import TranscriptError

    path = tmp_path / "transcript.jsonl"
    with TranscriptWriter(path, keyring, identities) as transcript:
        transcript.append(identities["data-center"].seal("compliance", "metric-query", "raw",
                                                         {"metric": "sp", "query_id": "q",
                                                          "predictions": np.zeros((1, 5))}))
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:1] + lines[2:]) + "\n")  # drop the message
    with pytest.raises(TranscriptError):
        narrate(path)


def _each(reply):
    """An adversary's reply as a list of envelopes (it sends a list for Probes)."""
    return reply if isinstance(reply, list) else [] if reply is None else [reply]


class _Known:
    """What an attack has pinned down so far, built from its progress reports (each: what changed)."""

    def __init__(self, n: int) -> None:
        self.targeted, self.a_hat, self.decided = np.zeros(n, bool), np.zeros(n, np.int8), np.zeros(n, bool)

    def apply(self, change) -> None:
        self.targeted[change.indices] = True
        self.a_hat[change.indices], self.decided[change.indices] = change.a_hat, change.decided


def test_a_targeted_attack_reports_each_target_as_its_answer_arrives(audit_arrays):
    """SingleQuery pins one more target per answer (the sign of SP, Example 1); progress says which."""
    from parley.parties.attacks.base import Answer, AttackerView
    from parley.parties.attacks.query_leakage.targeted import SingleQuery
    from parley.protocols.metrics import evaluate

    a, y = audit_arrays
    attack = SingleQuery(SingleQuery.Params(targets=[3, 7, 11]), AttackerView(n=a.size), np.random.default_rng(0))
    run = attack.run()
    probe = next(run)
    assert attack.progress() is None  # nothing answered yet
    known = _Known(a.size)
    for k in range(1, 4):
        answer = Answer(values=evaluate("sp", probe.predictions, a, y))
        with contextlib.suppress(StopIteration):
            probe = run.send(answer)
        change = attack.progress()
        assert change.indices.tolist() == [[3, 7, 11][k - 1]]  # the target this answer was about
        known.apply(change)
        assert np.flatnonzero(known.targeted).tolist() == [3, 7, 11][:k]
        assert known.decided[known.targeted].all() and (known.a_hat == a)[known.targeted].all()
    assert attack.progress() is None  # nothing new since


def test_the_precision_attack_pins_down_a_block_per_answer(audit_arrays):
    from parley.parties.attacks.base import Answer, AttackerView, each_probe
    from parley.parties.attacks.query_leakage.reveal import PrecisionReveal
    from parley.protocols.metrics import evaluate

    a, y = audit_arrays
    rng = np.random.default_rng(1)
    scores = rng.random(a.size)
    view = AttackerView(n=a.size, base_scores=scores, base_predictions=(scores >= 0.5).astype(np.int8), y=y)
    attack = PrecisionReveal(None, view, np.random.default_rng(2))
    run, pinned, known, answered = attack.run(), [], _Known(a.size), 0
    asked, final = next(run), None
    while final is None:
        for probe in each_probe(asked):  # the blocks of a Probes are answered one by one
            answered += 1
            try:
                asked = run.send(Answer(values=evaluate("sp", probe.matrix(), a, y)))
            except StopIteration as stop:
                final = stop.value
            change = attack.progress()  # asked after every answer, as the adversary party asks
            if change is not None:
                known.apply(change)
                pinned.append(int(known.decided.sum()))
    assert len(pinned) == answered - 1  # every answer but the base model's pins down its block
    assert pinned and pinned == sorted(pinned) and pinned[-1] == a.size
    assert (final.a_hat == a).all()


def test_the_paired_design_pins_down_each_block_as_its_answer_arrives(audit_arrays):
    """Every paired-design answer reads its block exactly, so progress grows to everyone and is never wrong."""
    from parley.parties.attacks.base import Answer, AttackerView
    from parley.parties.attacks.query_leakage.reveal import CompressedSensingReveal
    from parley.protocols.metrics import evaluate

    a, y = audit_arrays
    scores = np.random.default_rng(3).random(a.size)
    view = AttackerView(n=a.size, base_scores=scores, base_predictions=(scores >= 0.5).astype(np.int8), y=y)
    attack = CompressedSensingReveal(CompressedSensingReveal.Params(design="paired"), view, np.random.default_rng(4))
    run, pinned, known = attack.run(), [], _Known(a.size)
    probe, final = next(run), None
    while final is None:
        try:
            probe = run.send(Answer(values=evaluate("sp", np.atleast_2d(probe.predictions), a, y)))
        except StopIteration as stop:
            final = stop.value
        change = attack.progress()
        if change is not None:
            assert (change.a_hat[change.decided] == a[change.indices][change.decided]).all()
            known.apply(change)
            pinned.append(int(known.decided.sum()))
    assert len(pinned) >= 2 and pinned == sorted(pinned) and pinned[-1] == a.size
    assert (final.a_hat == a).all()


def test_the_adversary_keeps_each_progress_report_with_the_answer_that_brought_it(identities, keyring,
                                                                                   audit_arrays):
    """The adversary party asks after every answer; its reports, applied in order, end at everyone's A."""
    from parley.parties.adversary import Adversary
    from parley.parties.attacks.base import AttackerView
    from parley.parties.attacks.query_leakage.reveal import PrecisionReveal
    from tests.party_world import local_compliance

    a, y = audit_arrays
    scores = np.random.default_rng(1).random(a.size)
    view = AttackerView(n=a.size, base_scores=scores, base_predictions=(scores >= 0.5).astype(np.int8), y=y)
    attack = PrecisionReveal(None, view, np.random.default_rng(2))
    compliance = local_compliance(identities, keyring, audit_arrays)
    adversary = Adversary(identities["data-center"], keyring, attack, "compliance", "raw")
    envelopes, answers = _each(adversary.start()), []
    while envelopes:
        replies = [compliance.call("compliance", "receive", envelope) for envelope in envelopes]  # a burst
        answers += [answer.id for answer in replies]
        envelopes = [query for answer in replies for query in _each(adversary.receive(answer))]
    steps = adversary.progress()
    assert len(steps) >= 2 and [answer_id for answer_id, _ in steps] == answers[-len(steps):]
    known, pinned = _Known(a.size), []
    for _, change in steps:
        known.apply(change)
        pinned.append(int(known.decided.sum()))
    assert pinned == sorted(pinned) and pinned[-1] == a.size
    np.testing.assert_array_equal(known.a_hat, a)
