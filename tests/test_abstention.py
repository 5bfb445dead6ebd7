"""The text rule for abstention: every phrasing family declines wherever it stands, and an
answer that hedges, or partly declines but answers, is no abstention."""

from __future__ import annotations

import pytest

from labeler.generation.abstention import FAMILIES, decline_family
from labeler.generation.outcomes import is_abstention

#: Declines, by family: each a whole response people would mark "declines to answer".
DECLINES: dict[str, tuple[str, ...]] = {
    "no information": (
        "the warranty period is not stated in the provided documents.",
        "The provided context does not mention the warranty period.",
        "Thank you for your question. The warranty period is not specified in the documents.",
        "No information is given.",
        "There is no information about the warranty in the passages.",
        "I don't have enough information to answer that.",
        "Sorry, I couldn't find any information about that.",
        "Unfortunately, the documents describe the return policy, but the warranty period is not stated in them. "
        "You may want to contact the manufacturer.",
        "The sources do not contain the answer to this question.",
        "I can only provide information up to September 2021. Please check your local TV listings.",
        "Not specified with my knowledge cut-off (2021)",
        "The release date of that episode would require checking a current schedule.",
    ),
    "cannot answer": (
        "I cannot determine the warranty period from the given information.",
        "Based on the provided context, it is not possible to determine when the store opens.",
        "The opening date cannot be determined from these passages.",
        "I am unable to answer this question.",
    ),
    "refusal": (
        "I'm sorry, but I can't help with that based on this information.",
        "I won't answer that.",
        "As an AI language model, I do not have access to real-time information.",
        "Sorry, I can't assist with this request.",
    ),
    "clarification request": (
        "Your question is unclear: could you rephrase it?",
        "Could you clarify which product you mean?",
        "The question seems ambiguous. Please provide more details.",
        "I'm not sure what you mean by 'the period'. Can you be more specific?",
        "Please provide me with a specific event or year so I can give you the correct answer.",
        "unclear refering.",
    ),
    "I don't know": (
        "I don't know.",
        "I do not know the answer to that.",
        "I'm not sure.",
        "I have no idea, sorry.",
        "Unknown.",
        "As of my last update, I'm not aware of the Met Office leaving the BBC. You might need to check current news.",
    ),
}

#: Answers, wholly or in part: hedges that answer, partial answers, and texts that use a
#: family's words about something else.
ANSWERS = (
    "Paris.",
    "The documents do not say exactly, but the period is 2 years.",
    "I'm not sure this covers every case, but yes, you can return it within 30 days.",
    "Although the context does not state it, the period is 2 years.",
    "I cannot answer that from the context, but Paris is likely.",
    "Paris is the capital; the context does not mention its population.",
    "As an AI language model, I do not have access to real-time information. However, the film was set for May 18, 2018.",
    "There is no evidence that vaccines cause autism.",
    "It is not possible to travel faster than light.",
    "Nobody knows who built it, but it dates from 1200 BC.",
    "The return period is 30 days. I hope this helps!",
    "According to the documents, the warranty lasts two years.",
    "No data is lost when you restart the device.",
    "The warranty is 2 years. The documents do not mention an extended warranty.",
    "The question is unclear to many, yet the answer is 42.",
    "My knowledge goes up to 2021: the stamp then cost $0.58.",
)


def test_the_issue_s_declines_are_read_wherever_they_stand() -> None:
    assert [is_abstention(t) for t in ("the warranty period is not stated in the provided documents.",
                                       "I'm sorry, but I can't help with that based on this information.",
                                       "Your question is unclear: could you rephrase it?")] == [True, True, True]


def test_every_family_has_positive_examples_and_each_is_read_as_its_family() -> None:
    assert set(DECLINES) == set(FAMILIES)
    for family, texts in DECLINES.items():
        assert texts
        for text in texts:
            assert decline_family(text) == family, text


@pytest.mark.parametrize("text", ANSWERS)
def test_no_false_alarm_on_an_answer_that_hedges_or_partly_declines(text: str) -> None:
    assert decline_family(text) is None and not is_abstention(text)


def test_an_empty_response_is_an_abstention() -> None:
    assert [decline_family(t) for t in ("", "  \n", "…")] == ["empty", "empty", "empty"]
