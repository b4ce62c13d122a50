"""Soft matching of non-canonical values (MediTOD section 4.1: exact match is too conservative for free text).

A matcher decides whether a predicted value means the same as a gold value.
:func:`count_matches` pairs gold and predicted non-canonical tuples one-to-one,
greedily: two tuples may pair only when they agree on every element but the last
(the compared value); exact pairs are taken first.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from agent.core.ontology import DEFAULT_ONTOLOGY, load_ontology, load_vocabulary
from eval.metrics.encoder import default_encoder_path, encoder_name, offline
from eval.metrics.tuples import Tuple

MATCHERS = ("exact", "synonym", "embedding", "llm")
DEFAULT_EMBEDDING_THRESHOLD = 0.85  # MiniLM: 'few months ago'~'a couple of months ago' .91, 'wet cough'~'dry cough' .83

# MediTOD Appendix D, verbatim; the phrases are lower-cased as the official script does.
LLM_PROMPT = (
    "You are an expert in the English language. Your task is identifying whether two phrases have similar "
    'meanings. If the two phrases have similar meanings, say "positive." Otherwise, say "negative". Pay special '
    "attention to any medical terms present in the phrases. Here are the phrases.\n\n"
    "Phrase 1: {a}\n"
    "Phrase 2: {b}\n"
    "Answer (positive/negative):"
)


class Matcher:
    """Base matcher: exact comparison (values are already normalised by :func:`eval.metrics.tuples.normalize_value`)."""

    name = "exact"

    def prepare(self, values: Iterable[str]) -> None:
        """Called once with every value about to be compared, so batched matchers can precompute."""

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Called with every (gold, predicted) pair a run may compare, so a matcher that asks a server (the LLM
        judge) asks them all at once; the others ignore it (``pairs`` is not even read)."""

    def same(self, gold: str, pred: str) -> bool:
        return gold == pred

    def describe(self) -> dict:
        return {"name": self.name}

    def save(self) -> None:
        """Keep what this matcher paid for (an LLM judge's answers) for the next run; most keep nothing."""


class ExactMatcher(Matcher):
    name = "exact"


class SynonymMatcher(Matcher):
    """Values are the same when they name one questionnaire ontology entry, through the ontology's one synonym
    index (:meth:`agent.core.ontology.Ontology.resolve`: own code or display name first, a keyword only when it names
    exactly one entry)."""

    name = "synonym"

    def __init__(self, ontology: str | Path = DEFAULT_ONTOLOGY):
        self.ontology_path = Path(ontology)
        self.vocab = load_vocabulary(ontology=load_ontology(self.ontology_path))

    def code(self, value: str) -> str:
        """The concept a value names, by the one resolver (:meth:`agent.core.ontology.Vocabulary.concept`)."""
        return self.vocab.concept(value) or value

    def same(self, gold: str, pred: str) -> bool:
        return gold == pred or self.code(gold) == self.code(pred)

    def describe(self) -> dict:
        return {"name": self.name, "ontology": str(self.ontology_path)}


class EmbeddingMatcher(Matcher):
    """Cosine similarity of sentence embeddings >= threshold (the encoder directory's own pooling)."""

    name = "embedding"

    def __init__(self, encoder: str | Path | None = None, threshold: float = DEFAULT_EMBEDDING_THRESHOLD):
        offline()
        from sentence_transformers import SentenceTransformer

        self.path = Path(encoder) if encoder is not None else default_encoder_path()
        self.model = SentenceTransformer(str(self.path), device="cpu")
        self.threshold = threshold
        self._cache: dict[str, object] = {}

    def prepare(self, values: Iterable[str]) -> None:
        todo = sorted({v for v in values if v not in self._cache})
        if todo:
            vectors = self.model.encode(todo, normalize_embeddings=True, convert_to_tensor=True)
            self._cache.update(zip(todo, vectors, strict=True))

    def similarity(self, gold: str, pred: str) -> float:
        self.prepare([gold, pred])
        return float(self._cache[gold] @ self._cache[pred])

    def same(self, gold: str, pred: str) -> bool:
        return gold == pred or self.similarity(gold, pred) >= self.threshold

    def describe(self) -> dict:
        return {"name": self.name, "encoder": encoder_name(self.path), "threshold": self.threshold}


class LLMMatcher(Matcher):
    """Asks an OpenAI-compatible chat endpoint the MediTOD Appendix D question; answers are cached.

    ``url`` is the API base (``http://host:port/v1``). The verdict is read strictly: the answer's first word,
    punctuation and case aside, must be "positive" (a match) or "negative"; anything else ("not positive",
    "maybe", an empty answer) is no match and is counted in ``unparsed``, never taken as a yes. Answers are
    cached by (endpoint, model, pair), so a cache shared between judges never hands one judge's verdict to another;
    :meth:`prefetch` asks every uncached pair of a scoring run concurrently.
    """

    name = "llm"

    def __init__(self, url: str, model: str, cache: str | Path | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_tokens: int = 10, concurrency: int = 8):
        import httpx

        self.url = url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.concurrency = concurrency
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout,
                                   limits=httpx.Limits(max_connections=concurrency))
        self.cache_path = Path(cache) if cache else None
        self.answers: dict[str, str] = {}
        if self.cache_path and self.cache_path.exists():
            self.answers = json.loads(self.cache_path.read_text())
        self.calls = 0
        self.unparsed = 0
        import threading

        self._lock = threading.Lock()

    def _key(self, gold: str, pred: str) -> str:
        return json.dumps([self.url, self.model, gold, pred])

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Ask every uncached pair at once (a thread pool of ``concurrency`` requests)."""
        todo = sorted({(g, p) for g, p in pairs if g != p and self._key(g, p) not in self.answers})
        if not todo:
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(lambda gp: self.ask(*gp), todo))

    def ask(self, gold: str, pred: str) -> str:
        key = self._key(gold, pred)
        if key in self.answers:
            return self.answers[key]
        prompt = LLM_PROMPT.format(a=gold.lower(), b=pred.lower())
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": 0, "max_tokens": self.max_tokens}
        import httpx

        try:
            response = self.client.post("/chat/completions", json=body)
            response.raise_for_status()
            answer = response.json()["choices"][0]["message"]["content"] or ""
        except httpx.HTTPError as exc:
            raise ConnectionError(f"llm matcher: {self.url}/chat/completions failed: {exc}") from exc
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise RuntimeError(f"llm matcher: unexpected chat completion response: {response.text[:200]}") from exc
        with self._lock:
            self.calls += 1
            self.answers[key] = answer
        return answer

    def same(self, gold: str, pred: str) -> bool:
        if gold == pred:
            return True
        verdict = parse_verdict(self.ask(gold, pred))
        if verdict is None:
            self.unparsed += 1
        return verdict is True

    def save(self) -> None:
        if self.cache_path:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache_path.write_text(json.dumps(self.answers, indent=0))

    def describe(self) -> dict:
        return {"name": self.name, "url": self.url, "model": self.model, "calls": self.calls,
                "cached_answers": len(self.answers), "unparsed_answers": self.unparsed}


def parse_verdict(answer: str) -> bool | None:
    """The judge's verdict: True for "positive", False for "negative" (its first word), None for anything else."""
    words = re.findall(r"[a-z]+", answer.lower())
    if not words:
        return None
    return {"positive": True, "negative": False}.get(words[0])


def candidate_pairs(gold: Iterable[Tuple], pred: Iterable[Tuple]) -> set[tuple[str, str]]:
    """Every (gold value, predicted value) pair :func:`count_matches` may ask the matcher about."""
    gold, pred = set(gold), set(pred)
    exact = gold & pred
    by_prefix: dict[Tuple, list[Tuple]] = defaultdict(list)
    for p in pred - exact:
        by_prefix[p[:-1]].append(p)
    return {(g[-1], p[-1]) for g in gold - exact for p in by_prefix.get(g[:-1], [])
            if isinstance(g[-1], str) and isinstance(p[-1], str)}


def make_matcher(name: str = "exact", *, encoder: str | Path | None = None,
                 threshold: float = DEFAULT_EMBEDDING_THRESHOLD, ontology: str | Path = DEFAULT_ONTOLOGY,
                 llm_url: str | None = None, llm_model: str | None = None, llm_cache: str | Path | None = None,
                 llm_api_key: str | None = None) -> Matcher:
    if name == "exact":
        return ExactMatcher()
    if name == "synonym":
        return SynonymMatcher(ontology)
    if name == "embedding":
        return EmbeddingMatcher(encoder, threshold)
    if name == "llm":
        if not llm_url or not llm_model:
            raise ValueError("--match llm needs --llm-url and --llm-model")
        return LLMMatcher(llm_url, llm_model, cache=llm_cache, api_key=llm_api_key)
    raise ValueError(f"unknown matcher {name!r}; use one of {MATCHERS}")


def count_matches(gold: Iterable[Tuple], pred: Iterable[Tuple], matcher: Matcher) -> int:
    """Size of the one-to-one greedy matching between gold and predicted tuples (exact pairs first)."""
    gold, pred = set(gold), set(pred)
    exact = gold & pred
    left_pred: dict[Tuple, list[Tuple]] = defaultdict(list)
    for p in sorted(pred - exact, key=repr):
        left_pred[p[:-1]].append(p)
    matched = len(exact)
    for g in sorted(gold - exact, key=repr):
        candidates = left_pred.get(g[:-1], [])
        for i, p in enumerate(candidates):
            if isinstance(g[-1], str) and isinstance(p[-1], str) and matcher.same(g[-1], p[-1]):
                matched += 1
                del candidates[i]
                break
    return matched


def values_to_compare(gold: Iterable[Tuple], pred: Iterable[Tuple]) -> set[str]:
    """Every value :func:`count_matches` may hand the matcher (for :meth:`Matcher.prepare`)."""
    gold, pred = set(gold), set(pred)
    exact = gold & pred
    keys = {g[:-1] for g in gold - exact} & {p[:-1] for p in pred - exact}
    return {t[-1] for t in (gold | pred) - exact if t[:-1] in keys and isinstance(t[-1], str)}
