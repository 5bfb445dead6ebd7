"""Default judge prompts, prompt versions, and the strict reply parser.

A prompt is one user message with ``{placeholders}``: ``{query}``, ``{passage}`` and
``{rubric}`` for relevance; ``{question}``, ``{contexts}`` and ``{response}`` for
faithfulness; ``{question}``, ``{context}``, ``{first}`` and ``{second}`` for pairwise (the
response shown first and second). Every default asks for exactly one token a person could
give too. The prompt's version is the content hash of its text (with the rubric filled in),
stored with every verdict: a prompt edit is a new metric.

Parsing is strict: after trimming white space the reply must be exactly one of the allowed
tokens (case is ignored for words). Anything else is stored as unparseable, never guessed
(a "2." or "Grade: 2" is unparseable).
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass

from labeler.judge import JudgeError

RELEVANCE_PROMPT = """\
You grade how well a passage answers a search query, for a relevance test collection.

{rubric}
Grades: {scale}.

Query: {query}

Passage:
{passage}

Reply with exactly one digit, 0, 1, 2 or 3, and nothing else."""

FAITHFULNESS_PROMPT = """\
You check whether a response is supported by the given contexts.
Only claims the contexts support count: a claim that is true but not in the contexts is
unsupported. Length and a confident tone are not quality.

Question: {question}

Contexts:
{contexts}

Response:
{response}

Reply with exactly one word, SUPPORTED (every claim of the response is supported by the
contexts) or UNSUPPORTED (at least one claim is not), and nothing else."""

PAIRWISE_PROMPT = """\
You compare two responses to the same question and say which one is better.
Judge correctness and helpfulness; length and a confident tone are not quality, and the
order in which the responses are shown does not matter.

Question: {question}
{context}
Response A:
{first}

Response B:
{second}

Reply with exactly one token, A (response A is better), B (response B is better) or TIE,
and nothing else."""

DEFAULTS = {"relevance": RELEVANCE_PROMPT, "faithfulness": FAITHFULNESS_PROMPT, "pairwise": PAIRWISE_PROMPT}
PLACEHOLDERS = {
    "relevance": {"query", "passage", "rubric", "scale"},
    "faithfulness": {"question", "contexts", "response"},
    "pairwise": {"question", "context", "first", "second"},
}
#: The reply tokens each task accepts, and the verdict each stands for. A pairwise reply names
#: the slot (A: shown first); ``run`` maps it to the response shown there.
_TOKENS = {
    "relevance": {"0": "0", "1": "1", "2": "2", "3": "3"},
    "faithfulness": {"SUPPORTED": "SUPPORTED", "UNSUPPORTED": "UNSUPPORTED"},
    "pairwise": {"A": "A", "B": "B", "TIE": "TIE"},
}


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt template for one task, with the rubric (relevance) already filled in."""

    task: str
    template: str
    hash: str

    def render(self, **values: str) -> str:
        """The user message for one item (item text is inserted verbatim, never re-parsed)."""
        return self.template.format_map(values)


def prompt_hash(text: str) -> str:
    """A prompt's version: the first 12 hex digits of the sha256 of its text.

    >>> prompt_hash("Reply with one digit.")
    'd6c4e7940cc9'
    """
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _fields(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise JudgeError(f"prompt: {exc}; write a literal brace as {{{{ or }}}}") from None


def make_prompt(task: str, text: str | None = None, *, rubric: str = "", scale: str = "") -> Prompt:
    """The prompt for ``task``: ``text`` (a prompt file's content) or the default.

    ``{rubric}`` and ``{scale}`` are filled in here, so the hash covers the rubric's text.

    Raises:
        JudgeError: an unknown task or placeholder, or a template that does not parse.
    """
    if task not in DEFAULTS:
        raise JudgeError(f"task {task!r}: choose relevance, faithfulness or pairwise")
    template = DEFAULTS[task] if text is None else text
    unknown = _fields(template) - PLACEHOLDERS[task]
    if unknown or "" in _fields(template):
        raise JudgeError(
            f"prompt: unknown placeholder(s) {sorted(unknown)}; a {task} prompt may use "
            + ", ".join("{" + p + "}" for p in sorted(PLACEHOLDERS[task]))
        )
    if task == "relevance":
        template = template.replace("{rubric}", rubric.replace("{", "{{").replace("}", "}}"))
        template = template.replace("{scale}", scale.replace("{", "{{").replace("}", "}}"))
    return Prompt(task, template, prompt_hash(template))


def parse_reply(task: str, reply: str | None) -> str | None:
    """The verdict token of a reply, or None when it is not exactly one allowed token.

    >>> parse_reply("relevance", " 2\\n"), parse_reply("relevance", "2."), parse_reply("pairwise", "tie")
    ('2', None, 'TIE')
    """
    if reply is None:
        return None
    text = reply.strip()
    return _TOKENS[task].get(text.upper() if task != "relevance" else text)
