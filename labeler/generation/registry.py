"""The generation metrics, each defined once: what a metric is (its name, how a table shows it,
the task whose verdicts it rests on, the value it is a mean of), kept apart from how it is
computed, as ir-measures keeps a measure's name apart from its backends.

Every command that takes or reports a generation metric reads its names here:
``answer-metrics`` every per-answer metric (:mod:`labeler.generation.metrics`), ``gate`` those
marked ``gate`` (:mod:`labeler.diagnosis.gate`), ``estimate`` the item metrics
(:mod:`labeler.judges.estimate`). A new generation metric is one more line of :data:`METRICS`,
then its computation where its kind is computed.

>>> ANSWER_METRICS
('faithfulness', 'supported_answers', 'correctness', 'answer-relevance', 'abstention')
>>> sorted(GATE_METRICS), ITEM_METRICS
(['answer-relevance', 'correctness', 'faithfulness'], ('faithfulness-rate', 'win-rate'))
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GenerationMetric:
    """One generation metric.

    Attributes:
        name: as written on the command line and in JSON.
        label: as a table shows it.
        task: the task whose verdicts it is a mean of (a judge's calibration card for that task
            goes beside its numbers).
        value: the :class:`labeler.generation.outcomes.Outcome` attribute that is one answer's
            value; None for an item metric, a mean over the task's verdict items.
        gate: ``goldpool gate`` takes it as a ``--metric``.
        bounds: the range its per-item value lives in (estimates are kept inside it).
    """

    name: str
    label: str
    task: str
    value: str | None
    gate: bool = False
    bounds: tuple[float, float] = (0.0, 1.0)


#: Every generation metric; the per-answer ones in the order they are always shown (faithfulness
#: first, never without the others: an "I don't know" is perfectly faithful and useless).
METRICS: tuple[GenerationMetric, ...] = (
    GenerationMetric("faithfulness", "faithfulness", "claims", "faithfulness", gate=True),
    GenerationMetric("supported_answers", "supported answers", "faithfulness", "supported_answer"),
    GenerationMetric("correctness", "correctness", "correctness", "correct", gate=True),
    GenerationMetric("answer-relevance", "answer relevance", "answer-relevance", "addresses", gate=True),
    GenerationMetric("abstention", "abstention", "answer-relevance", "abstained"),
    GenerationMetric("faithfulness-rate", "faithfulness rate", "faithfulness", None),
    GenerationMetric("win-rate", "win rate", "pairwise", None),
)

#: Name -> metric.
BY_NAME: dict[str, GenerationMetric] = {m.name: m for m in METRICS}
#: The per-answer metrics of ``answer-metrics``, in the order shown.
ANSWER_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.value is not None)
#: The metrics ``gate`` takes: name -> metric.
GATE_METRICS: dict[str, GenerationMetric] = {m.name: m for m in METRICS if m.gate}
#: The metrics over verdict items that ``estimate`` takes (beside its relevance metrics).
ITEM_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.value is None)
#: What faithfulness is never reported without, in the order the gate says them: an "I don't
#: know" is perfectly faithful and useless.
BESIDE_FAITHFULNESS: tuple[str, ...] = ("abstention", "correctness", "answer-relevance")
#: Name -> how a table shows it.
LABELS: dict[str, str] = {m.name: m.label for m in METRICS}
#: Where a per-answer metric's value comes from: people (their majority verdicts), one judge, and
#: PPI++ (people where they labelled, the judge everywhere).
SOURCES: tuple[str, ...] = ("people", "judge", "ppi")
#: Where an abstention rate comes from, in the order shown: ``text`` is the text rule's.
ABSTENTION_SOURCES: tuple[str, ...] = ("text", *SOURCES)
#: Why an answer has no faithfulness, in the order the reasons are checked and said.
LEFT_OUT: tuple[str, ...] = ("empty", "no_claims", "split", "unjudged", "all_flagged")
