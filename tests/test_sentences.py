"""The offline sentence splitter on hand-made cases: abbreviations, initials, decimals, lists."""

from __future__ import annotations

import pytest

from labeler.generation.sentences import split_sentences


@pytest.mark.parametrize(("text", "sentences"), [
    ("Paris is the capital. It has 2.1 million people.", ["Paris is the capital.", "It has 2.1 million people."]),
    ("Dr. Smith paid $3.50 for it. It rained!  Then e.g. snow fell.",
     ["Dr. Smith paid $3.50 for it.", "It rained!", "Then e.g. snow fell."]),
    ("The U.S. Army was founded in 1775. It is large.", ["The U.S. Army was founded in 1775.", "It is large."]),
    ("J. K. Rowling wrote it. Version 3.11 is out.", ["J. K. Rowling wrote it.", "Version 3.11 is out."]),
    ("See Fig. 3 and No. 5 for details. Done.", ["See Fig. 3 and No. 5 for details.", "Done."]),
    ("Smith et al. Reported it. Vs. others.", ["Smith et al. Reported it.", "Vs. others."]),
    ("He said \"Stop.\" Then he left.", ["He said \"Stop.\"", "Then he left."]),
    ("It is (roughly) 5 km. (See the map.) Done?", ["It is (roughly) 5 km.", "(See the map.)", "Done?"]),
    ("Wait... What? Yes!", ["Wait...", "What?", "Yes!"]),
    ("pH is 7.4 at 37 °C. This is normal.", ["pH is 7.4 at 37 °C.", "This is normal."]),
    ("Water is H2O. It boils.", ["Water is H2O.", "It boils."]),
    ("See example.com for details. It is free.", ["See example.com for details.", "It is free."]),
    ("Apples, pears, etc. Some are red.", ["Apples, pears, etc.", "Some are red."]),
    ("the price rose. then it fell.", ["the price rose. then it fell."]),  # no capital: one sentence
    ("Paris:\n- It is big.\n* It is old\n1. First\n2) Second\na) third", ["Paris:", "It is big.", "It is old", "First",
                                                                          "Second", "third"]),
    ("First paragraph.\n\nSecond one.", ["First paragraph.", "Second one."]),
    ("Üblich ist das. Étienne kam.", ["Üblich ist das.", "Étienne kam."]),
    ("I don't know.", ["I don't know."]),
    ("", []),
    ("  \n \u200b ", []),
])
def test_hand_cases(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_split_claims_by_sentences_gives_a_declining_answer_no_claims(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from labeler.cli import cli
    from labeler.store import connect

    answers = [
        {"answer_id": "d1", "question": "Warranty?", "response": "Thanks for asking. The warranty period is not stated in the provided documents."},
        {"answer_id": "d2", "question": "Help?", "response": "I'm sorry, but I can't help with that based on this information."},
        {"answer_id": "d3", "question": "Period?", "response": "The documents do not say exactly, but the period is 2 years."},
    ]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    db = str(tmp_path / "p.db")
    for args in (["init", db], ["import-answers", db, str(tmp_path / "a.jsonl"), "--system", "S"]):
        assert CliRunner().invoke(cli, args).exit_code == 0
    result = CliRunner().invoke(cli, ["split-claims", db, "--system", "S", "--sentences", "--json"])
    assert result.exit_code == 0, result.output
    assert {k: json.loads(result.output)[k] for k in ("answers", "claims", "skipped")} == {"answers": 1, "claims": 1, "skipped": 2}
    with connect(db) as conn:
        assert conn.execute("SELECT claim_id, text FROM claims").fetchall() == [("d3#1", answers[2]["response"])]
