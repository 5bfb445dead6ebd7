"""The text rule for abstention: does a response decline to answer?

A response declines when it is empty, or when it has a declining part and nothing that answers.
It is read in parts: sentences (and lines), each cut again at a contrast (``but``,
``however``, ``though``, ``although``, ``yet``, ``whereas``, ``except``) and at ``;`` or ``:``.
Each part is one of three kinds:

- **declines**: it says one of the phrasing families of :data:`FAMILIES`: no information in
  the context (``the warranty period is not stated in the provided documents``), cannot answer
  (``I cannot determine ...``), a refusal (``I'm sorry, but I can't help with that``), a
  clarification request (``your question is unclear: could you rephrase it?``) or "I don't
  know" (``I'm not sure``, ``I have no idea``);
- **framing**: it only surrounds a decline: an apology or thanks, a suggestion to look
  elsewhere (``you may want to check the official website``), an offer (``if you can give
  more details, I can help``), what the sources are about instead (``the documents describe
  the return policy``);
- **content**: anything else.

The rule for answers that partly answer and partly decline: a response with any content part
is an answer, not an abstention, wherever the decline stands (first, last, in the middle).
So a hedge that answers (``The documents do not say exactly, but the period is 2 years.``,
``I'm not sure this covers every case, but yes, you can ...``) and a partial answer
(``Paris is the capital; the context does not mention its population.``) are not abstentions:
correctness and answer relevance score what they give. A response is an abstention only when
it gives no answer of its own: every part declines or frames a decline.

No model, no download: the same text always gives the same reading (:data:`RULE` names the
rule's version).
"""

from __future__ import annotations

import re

#: The version of the rule (reported beside the rate it gives).
RULE = "declines-v2"

_I = r"(?:i|we)"
_NOT = r"(?:do\s+not|don['’]t|does\s+not|doesn['’]t|did\s+not|didn['’]t)"
_CANNOT = (r"(?:cannot|can\s*not|can['’]t|could\s+not|couldn['’]t|am\s+unable\s+to|['’]m\s+unable\s+to|are\s+unable\s+to|"
           r"am\s+not\s+able\s+to|['’]m\s+not\s+able\s+to|was\s+unable\s+to|was\s+not\s+able\s+to|"
           r"am\s+not\s+in\s+a\s+position\s+to|have\s+no\s+way\s+to)")
_SOURCE = (r"(?:(?:provided|given|available|retrieved|supplied|above|attached|following|these|those|this|my|the|your)\s+)*"
           r"(?:documents?|context|contexts|sources?|passages?|information|text|texts|excerpts?|articles?|"
           r"search\s+results|results|materials?|data|knowledge\s+base|records?|snippets?|references?|pages?)")
_TELL = (r"(?:answer|say|tell|determine|provide|give|confirm|find|identify|know|specify|verify|help|assist|"
         r"locate|offer|share|comment|predict|access|browse|retrieve)")
_MISSING = (r"(?:stated|mentioned|specified|provided|given|included|available|found|covered|addressed|discussed|"
            r"listed|described|indicated|present|contained|explained|detailed|documented|known|disclosed|reported|clear)")

#: The phrasing families of a decline, each a list of patterns searched in one part of a
#: response (case ignored). Every family has positive and negative examples in the tests.
FAMILIES: dict[str, tuple[str, ...]] = {
    "refusal": (
        rf"\b{_I}\s+(?:won['’]t|will\s+not|must\s+decline|decline|refuse|am\s+not\s+going\s+to|would\s+rather\s+not)\b",
        rf"\b{_I}\s+(?:{_CANNOT})\s+(?:\w+\s+){{0,2}}?(?:with\s+that|this\s+request|that\s+request|comply|fulfil+|do\s+that)\b",
        r"\bas\s+an\s+ai(?:\s+(?:language\s+)?model|\s+assistant)?\b.*\b(?:not|n['’]t|cannot|unable|no)\b",
        r"\b(?:not\s+able|unable)\s+to\s+(?:help|assist)\b",
    ),
    "no information": (
        rf"\b(?:is|are|was|were|isn['’]t|aren['’]t)\s+(?:not\s+)?(?:explicitly\s+|directly\s+|clearly\s+)?{_MISSING}\s+"
        rf"(?:anywhere\s+)?(?:in|by|within|from)\s+(?:{_SOURCE}|them|it|there)\b",
        rf"\b{_SOURCE}\s+(?:does|do|did)\s*(?:not|n['’]t)\s+(?:appear\s+to\s+|seem\s+to\s+|explicitly\s+|directly\s+|clearly\s+)?"
        r"(?:contain|say|mention|provide|specify|state|include|give|cover|address|indicate|discuss|offer|have|"
        r"reveal|describe|list|answer|tell|detail|explain|refer|talk|hold|show|support|identify|clarify|disclose)",
        rf"\b{_SOURCE}\s+(?:is|are)\s+(?:silent|insufficient|not\s+sufficient|inconclusive)\b",
        r"\bthere\s+(?:is|are|was|were)\s+no\s+(?:specific\s+|explicit\s+|relevant\s+|direct\s+|available\s+|clear\s+|such\s+)?"
        r"(?:information|mention|data|details?|indication|reference|record|answer)\b",
        r"\b(?:there\s+is\s+|i\s+have\s+|i\s+found\s+|with\s+)?(?:not\s+enough|insufficient|no\s+(?:relevant\s+|specific\s+)?)"
        r"(?:information|context|data|details)\s+(?:is\s+|was\s+)?(?:(?:available|provided|given|found|here|to)\b)",
        r"^\s*(?:there\s+is\s+|i\s+have\s+)?(?:not\s+enough|insufficient|no)\s+(?:information|context|data)"
        r"(?:\W*$|\s+(?:about|on|regarding|concerning|for)\b)",
        rf"\b{_I}\s+(?:{_CANNOT}|{_NOT})\s+(?:seem\s+to\s+)?(?:find|locate|see|have|access)\s+(?:any\s+|the\s+|enough\s+|"
        r"specific\s+|relevant\s+|sufficient\s+|real[-\s]time\s+|up[-\s]to[-\s]date\s+|current\s+)*(?:information|details|data|"
        r"mention|answer|record|reference|access|context|knowledge)",
        rf"\b{_I}\s+(?:have|had)\s+no\s+(?:information|data|details|knowledge|access|record)",
        r"\bno\s+(?:information|mention|data|details)\s+(?:about|on|of|regarding|concerning)\b.*\b(?:in|from)\s+" + _SOURCE,
        r"\b(?:my\s+)?knowledge\s+(?:only\s+)?(?:goes|extends|is\s+limited|is\s+current)\s+(?:up\s+)?(?:to|until)\b",
        r"\b(?:i\s+)?can\s+only\s+provide\s+information\s+(?:up\s+to|until|as\s+of)\b",
        r"^\s*not\s+(?:specified|stated|mentioned|given|available|provided)\b",
        r"\b(?:would|will)\s+require\s+(?:checking|consulting|looking\s+up)\b",
        r"\b(?:beyond|outside)\s+(?:the\s+scope\s+of\s+)?(?:the\s+|my\s+)?(?:provided\s+|given\s+)?(?:context|documents?|knowledge)\b",
    ),
    "cannot answer": (
        rf"\b{_I}\s+{_CANNOT}\s+(?:\w+\s+){{0,2}}?{_TELL}\b",
        rf"\b(?:it\s+is|it['’]s|it\s+was)\s+(?:not\s+possible|impossible|unclear|difficult|hard)\s+(?:for\s+me\s+)?to\s+{_TELL}\b",
        r"\b(?:cannot|can\s*not|can['’]t|could\s+not|couldn['’]t)\s+be\s+(?:determined|answered|found|confirmed|known|said|"
        r"identified|established|verified|inferred|deduced)\b",
        r"\b(?:is|are)\s+(?:not\s+(?:possible|able)\s+to\s+(?:be\s+)?(?:determined|answered)|unanswerable)\b",
        r"^\s*(?:the\s+)?(?:question\s+is\s+)?unanswerable\b",
        r"\bno\s+(?:definitive|definite|clear|certain)\s+answer\b",
    ),
    "clarification request": (
        r"\b(?:your|the|this)\s+question\s+(?:is|seems|appears)\s+(?:to\s+be\s+)?(?:unclear|ambiguous|vague|incomplete|"
        r"not\s+clear|confusing|too\s+broad)\b",
        r"\b(?:could|can|would)\s+you\s+(?:please\s+)?(?:rephrase|clarify|elaborate|specify|be\s+more\s+specific|"
        r"provide\s+more|give\s+more|tell\s+me\s+more|explain\s+what)\b",
        r"\bplease\s+(?:rephrase|clarify|specify|be\s+more\s+specific|provide\s+more|give\s+more)\b",
        r"\bplease\s+(?:provide|give|tell)\s+(?:me\s+)?(?:with\s+)?(?:a\s+|the\s+|some\s+)?(?:more\s+)?"
        r"(?:specific|particular|additional|further|context|details|information|year|date|event)\b",
        r"^\s*(?:the\s+question\s+is\s+)?(?:unclear|ambiguous)\b",
        r"\b(?:i['’]m|i\s+am)\s+not\s+sure\s+what\s+you\s+(?:mean|are\s+asking|['’]re\s+asking)\b",
        r"\bwhat\s+do\s+you\s+mean\b",
        r"\b(?:more|additional)\s+(?:context|details|information)\s+(?:is|would\s+be)\s+(?:needed|required)\b",
    ),
    "I don't know": (
        rf"\b{_I}\s+{_NOT}\s+know\b",
        r"\b(?:i['’]m|i\s+am)\s+(?:not\s+(?:sure|certain|aware\s+of)|unsure|uncertain)\b",
        r"\b{_I}\s+have\s+no\s+idea\b".format(_I=_I),
        r"^\s*(?:the\s+answer\s+is\s+)?(?:unknown|not\s+known)\W*$",
        r"^\s*(?:no\s+idea|not\s+sure|n/?a|none\s+given|no\s+answer)\W*$",
        r"\b(?:nobody|no\s+one)\s+knows\b",
    ),
}

#: Parts that only surround a decline: apology, thanks, a pointer elsewhere, an offer, a
#: description of what the sources are about instead. Matched at the start of a part.
FRAMING: tuple[str, ...] = (
    r"^(?:(?:i['’]m|i\s+am|we['’]re|we\s+are)\s+)?(?:so\s+|very\s+|really\s+|truly\s+)?(?:sorry|afraid)\b",
    r"^(?:i|we)\s+apologi[sz]e\b|^(?:my\s+)?apologies\b|^unfortunately\W*$|^regrettably\W*$",
    r"^(?:thank\s+you|thanks)\b|^(?:great|good|interesting)\s+question\b",
    r"^(?:i\s+hope\s+this\s+helps|hope\s+this\s+helps|let\s+me\s+know)\b",
    r"^(?:you\s+(?:may|might|could|can|should)\s+(?:want\s+to\s+|wish\s+to\s+|try\s+(?:to\s+)?)?|i\s+(?:would\s+)?(?:recommend|suggest)|"
    r"i\s+would\s+(?:advise|encourage)|it\s+(?:is|would\s+be)\s+(?:best|advisable|recommended)\s+to|"
    r"please\s+|try\s+|consider\s+|for\s+(?:more|further|accurate|up[-\s]to[-\s]date|the\s+latest)\b|to\s+(?:get|find|obtain)\s+)"
    r".{0,80}?\b(?:check|consult|contact|refer|visit|look|search|ask|reach\s+out|see|confirm|verify|"
    r"speak|review|official|website|source|expert|professional|manufacturer|documentation|latest)",
    r"^(?:if\s+you\s+(?:can|could|have|provide|give|share|let)|with\s+more\s+(?:context|details|information))\b",
    r"^(?:i\s+(?:can|could|would\s+be\s+happy\s+to|['’]d\s+be\s+happy\s+to|am\s+happy\s+to)\s+(?:try\s+to\s+)?help)\b",
    rf"^(?:{_SOURCE})\s+(?:only\s+|mainly\s+|mostly\s+)?(?:discuss|describe|mention|cover|talk|are\s+about|is\s+about|"
    r"focus|deal|relate|contain|provide|list|include|refer|concern|explain|address)",
    r"^(?:based\s+on|according\s+to|from|given|in)\s+(?:the\s+|this\s+)?(?:provided\s+|given\s+|available\s+|above\s+|retrieved\s+)?"
    r"(?:context|documents?|information|passages?|sources?|text|data)\W*$",
    r"^(?:unfortunately|regrettably|however|sadly)\W*$",
)

_FAMILY_RE = {name: tuple(re.compile(p, re.IGNORECASE) for p in patterns) for name, patterns in FAMILIES.items()}
_FRAMING_RE = tuple(re.compile(p, re.IGNORECASE) for p in FRAMING)
# Where a response is cut into parts: sentence ends, line breaks, ``;`` and ``:``, and before a contrast.
_SENTENCE = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+|\s*[;:]\s+|\s+[—–]\s+")
_CONTRAST = re.compile(r",?\s*\b(?:but|however|though|although|even\s+though|yet|whereas|except\s+that|that\s+said|"
                       r"nevertheless|nonetheless|still)\b[,\s]*", re.IGNORECASE)
_LEADING = re.compile(r"^\s*(?:although|though|even\s+though|while|whilst|even\s+if)\b[^,]*,", re.IGNORECASE)
_WORD = re.compile(r"\w")
_INTERJECTION = re.compile(r"^(?:(?:unfortunately|regrettably|sadly|however|also|additionally|but|so|well|that\s+said)\W+)+",
                           re.IGNORECASE)


def parts(response: str) -> list[str]:
    """The parts a response is read in (see the module's docstring), stripped, non-empty.

    >>> parts("The documents do not say exactly, but the period is 2 years.")
    ['The documents do not say exactly', 'the period is 2 years.']
    """
    out: list[str] = []
    for sentence in _SENTENCE.split(response):
        lead = _LEADING.match(sentence)
        pieces = [sentence[:lead.end()].rstrip(","), sentence[lead.end():]] if lead else [sentence]
        for piece in pieces:
            out.extend(p.strip(" ,") for p in _CONTRAST.split(piece))
    return [p for p in out if _WORD.search(p)]


def part_family(part: str) -> str | None:
    """The family of decline a part of a response says, or None.

    >>> part_family("the warranty period is not stated in the provided documents."), part_family("It is 2 years.")
    ('no information', None)
    """
    for name, patterns in _FAMILY_RE.items():
        if any(p.search(part) for p in patterns):
            return name
    return None


def is_framing(part: str) -> bool:
    """Whether a part only surrounds a decline (apology, a pointer elsewhere, an offer ...)."""
    part = _INTERJECTION.sub("", part)
    return any(p.search(part) for p in _FRAMING_RE)


def decline_family(response: str) -> str | None:
    """The family of the first declining part when ``response`` declines as a whole, "empty"
    for an empty response, else None (an answer, wholly or in part).

    >>> decline_family("I'm sorry, but I can't help with that based on this information.")
    'refusal'
    >>> decline_family("The documents do not say exactly, but the period is 2 years.") is None
    True
    """
    if not _WORD.search(response):
        return "empty"
    first = None
    for part in parts(response):
        family = part_family(part)
        if family is not None:
            first = first or family
        elif not is_framing(part):
            return None  # content: the response answers, at least in part
    return first


def is_abstention(response: str) -> bool:
    """Whether ``response`` declines to answer: empty, or declining with no answer of its own.

    >>> [is_abstention(t) for t in ("", "  ", "I don't know.", "No information is given.", "Paris.")]
    [True, True, True, True, False]
    >>> is_abstention("I cannot answer that from the context, but Paris is likely.")
    False
    """
    return decline_family(response) is not None
