"""The generation metrics, each defined once: what a metric is (its name, how a table shows it,
the task whose verdicts it rests on, the value it is a mean of), kept apart from how it is
computed, as ir-measures keeps a measure's name apart from its backends.

Every command that takes or reports a generation metric reads its names here:
``answer-metrics`` every per-answer metric (:mod:`labeler.generation.metrics`), ``gate`` those
marked ``gate`` (:mod:`labeler.diagnosis.gate`), ``estimate`` the item metrics
(:mod:`labeler.judges.estimate`), ``nugget-metrics`` the four nugget scores TREC's RAG track
reports (:mod:`labeler.generation.nuggets`). A new generation metric is one more line of :data:`METRICS`,
then its computation where its kind is computed.

>>> ANSWER_METRICS
('faithfulness', 'supported_answers', 'correctness', 'answer-relevance', 'abstention')
>>> sorted(GATE_METRICS), ITEM_METRICS
(['all', 'answer-relevance', 'correctness', 'faithfulness', 'strict_all', 'strict_vital', 'vital'], ('faithfulness-rate', 'win-rate'))
>>> NUGGET_METRICS
('all', 'vital', 'strict_all', 'strict_vital')
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
            value (for a nugget score, its key in
            :attr:`labeler.generation.nuggets.AnswerScore.scores`); None for an item metric, a
            mean over the task's verdict items.
        gate: ``goldpool gate`` takes it as a ``--metric``.
        bounds: the range its per-item value lives in (estimates are kept inside it).
    """

    name: str
    label: str
    task: str
    value: str | None
    gate: bool = False
    bounds: tuple[float, float] = (0.0, 1.0)

    @property
    def nugget(self) -> bool:
        """A nugget score (``nugget-metrics``), a mean over answers of their nugget support."""
        return self.task == NUGGET_TASK


#: The task of support per (answer, nugget), which the nugget scores rest on.
NUGGET_TASK = "nuggets"

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
    # The nugget scores (castorini nuggetizer's calculate_nugget_scores): support 1, partial
    # support 0.5 (0 in the strict ones), over all nuggets or the vital ones.
    GenerationMetric("all", "all", NUGGET_TASK, "all", gate=True),
    GenerationMetric("vital", "vital", NUGGET_TASK, "vital", gate=True),
    GenerationMetric("strict_all", "strict all", NUGGET_TASK, "strict_all", gate=True),
    GenerationMetric("strict_vital", "strict vital", NUGGET_TASK, "strict_vital", gate=True),
)

#: Name -> metric.
BY_NAME: dict[str, GenerationMetric] = {m.name: m for m in METRICS}
#: The per-answer metrics of ``answer-metrics``, in the order shown.
ANSWER_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.value is not None and not m.nugget)
#: The nugget scores of ``nugget-metrics``, in the order shown.
NUGGET_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.nugget)
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
