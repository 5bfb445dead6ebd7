"""What calls cost before they are made, and after: prompt tokens, replies, prices.

Before a run (``--dry-run``), every call it would make after the cache is counted and its
message's tokens with a tokenizer: a Hugging Face ``tokenizer.json`` given by path, a
``tiktoken`` encoding (``tiktoken:NAME``, or the model's own when ``tiktoken`` is installed and
has its encoding file at hand), else an estimate of one token per 4 characters, and the plan
says which. The count is of the message's text: an endpoint's chat template adds a few tokens a
call, which the plan does not know. Replies are bounded by the token limit, so their cost is
given as at most that.

After a run, the tokens are the ones the endpoint reported (``usage``), and the cost is those
at the prices given (per million tokens, in and out).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from labeler.judges import JudgeError

#: Characters a token when no tokenizer is at hand (English prose under BPE tokenizers).
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """How prompt tokens are counted: ``how`` in words, ``count`` on one message."""

    how: str
    count: Callable[[str], int]
    exact: bool


def _estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _huggingface(path: Path) -> Tokenizer:
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError:
        raise JudgeError(f"--tokenizer {path}: reading a tokenizer.json needs the tokenizers package "
                         "(pip install tokenizers)") from None
    try:
        tok = HFTokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 (the library raises its own kinds)
        raise JudgeError(f"--tokenizer {path}: not a tokenizer.json the tokenizers package reads ({exc})") from None
    return Tokenizer(f"tokenizer {path.name}", lambda text: len(tok.encode(text, add_special_tokens=False).ids), True)


def _tiktoken_cached() -> bool:
    """Whether tiktoken has a cache of encoding files here (it would download them otherwise)."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or \
        os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.isdir(folder) and any(os.scandir(folder))


def _tiktoken(name: str | None, model: str) -> Tokenizer:
    import tiktoken

    encoding = tiktoken.get_encoding(name) if name else tiktoken.encoding_for_model(model)
    return Tokenizer(f"tiktoken {encoding.name}", lambda text: len(encoding.encode(text, disallowed_special=())), True)


def tokenizer(spec: str | None, model: str) -> Tokenizer:
    """The tokenizer of a plan: ``spec`` a ``tokenizer.json`` path or ``tiktoken:NAME``; None:
    the model's tiktoken encoding when tiktoken is installed with its files at hand, else the
    character estimate.

    >>> tokenizer(None, "no-such-model").how
    'estimated from characters (1 token a 4 characters)'

    Raises:
        JudgeError: a given tokenizer that cannot be loaded.
    """
    estimate = Tokenizer(f"estimated from characters (1 token a {CHARS_PER_TOKEN} characters)", _estimate, False)
    if spec is not None and spec.startswith("tiktoken:"):
        try:
            return _tiktoken(spec.split(":", 1)[1], model)
        except ImportError:
            raise JudgeError(f"--tokenizer {spec}: tiktoken is not installed (pip install tiktoken)") from None
        except Exception as exc:  # noqa: BLE001 (an unknown name, or its file out of reach)
            raise JudgeError(f"--tokenizer {spec}: tiktoken cannot load it ({type(exc).__name__}: {exc})"[:300]) from None
    if spec is not None:
        path = Path(spec)
        if not path.is_file():
            raise JudgeError(f"--tokenizer {spec}: no such file (give a tokenizer.json, or tiktoken:NAME)")
        return _huggingface(path)
    try:
        import tiktoken  # noqa: F401 (installed?)
    except ImportError:
        return estimate
    if not _tiktoken_cached():
        return estimate
    try:
        return _tiktoken(None, model)
    except Exception:  # noqa: BLE001 (a model tiktoken does not know, or its file out of reach: estimate)
        return estimate


@dataclass(frozen=True, slots=True)
class Prices:
    """Prices per million tokens, prompt (``price_in``) and reply (``price_out``); None: not given."""

    price_in: float | None = None
    price_out: float | None = None

    @property
    def given(self) -> bool:
        return self.price_in is not None or self.price_out is not None

    def cost(self, tokens_in: int, tokens_out: int) -> float | None:
        """The cost of these tokens (None without prices; a price not given counts as 0).

        >>> Prices(0.15, 0.60).cost(2_000_000, 100_000)
        0.36
        """
        if not self.given:
            return None
        return round(((self.price_in or 0.0) * tokens_in + (self.price_out or 0.0) * tokens_out) / 1e6, 10)


@dataclass(slots=True)
class CallPlan:
    """The calls a dry run would make: counted, never sent.

    Attributes:
        tokenizer: how prompt tokens are counted.
        max_tokens: the reply budget of each call (replies cost at most that many tokens).
        calls: calls to make (after the cache).
        from_cache: calls the cache answers (no cost).
        prompt_tokens: the messages' tokens over the calls to make.
    """

    tokenizer: Tokenizer
    max_tokens: int
    calls: int = 0
    from_cache: int = 0
    prompt_tokens: int = 0
    _counted: dict[str, int] = field(default_factory=dict)

    def add(self, message: str) -> None:
        """Count one call to make (a message asked K times is counted once)."""
        self.calls += 1
        n = self._counted.get(message)
        if n is None:
            n = self._counted[message] = self.tokenizer.count(message)
        self.prompt_tokens += n

    def as_dict(self, prices: Prices) -> dict[str, object]:
        """JSON-ready: calls, from_cache, prompt_tokens, tokenizer, reply_tokens_at_most and,
        with prices, cost_prompt and cost_at_most (prompt and replies at the full budget)."""
        out: dict[str, object] = {"calls": self.calls, "from_cache": self.from_cache, "prompt_tokens": self.prompt_tokens,
                                  "tokenizer": self.tokenizer.how, "tokens_exact": self.tokenizer.exact,
                                  "reply_tokens_at_most": self.calls * self.max_tokens}
        if prices.given:
            out["cost_prompt"] = prices.cost(self.prompt_tokens, 0)
            out["cost_at_most"] = prices.cost(self.prompt_tokens, self.calls * self.max_tokens)
        return out
