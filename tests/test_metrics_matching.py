"""Soft matching of non-canonical values: synonym (ontology), embedding (real MiniLM), llm (OpenAI-compatible)."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.core.data import Example
from eval.metrics.lenient import score_nlu_lenient, score_pol_lenient
from eval.metrics.matching import (
    LLM_PROMPT,
    ExactMatcher,
    LLMMatcher,
    SynonymMatcher,
    count_matches,
    make_matcher,
    parse_verdict,
)


def frame(**attrs):
    return [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", **attrs}]}}]


def score_pair(gold, pred, matcher):
    return score_nlu_lenient([Example("nlu", "d", 1, [], [], gold)], {("d", 1): pred}, matcher)


def test_greedy_matching_is_one_to_one_and_needs_equal_keys():
    same_meaning = {("a", "x"), ("a", "y")}  # a toy matcher: x ~ y

    class Toy(ExactMatcher):
        def same(self, gold, pred):
            return gold == pred or (gold, pred) in same_meaning

    gold = {("k", "a"), ("k", "b")}
    assert count_matches(gold, {("k", "x"), ("k", "y")}, Toy()) == 1  # "a" pairs once only
    assert count_matches(gold, {("k", "b"), ("k", "x")}, Toy()) == 2  # exact "b" first, then a~x
    assert count_matches({("k", "a")}, {("other", "x")}, Toy()) == 0  # every element but the value must agree


def test_synonym_matcher_unifies_keywords_of_one_ontology_entry():
    m = SynonymMatcher()
    assert m.same("pyrexia", "febrile")  # both keywords of the "fever" entry
    assert m.same("increased body temperature", "fever")  # a keyword and the entry's own code
    assert not m.same("pyrexia", "pain")
    assert not m.same("ache", "chest pain")  # "ache" is listed under several entries: ambiguous, not unified
    gold = frame(aggravating_factor=["pyrexia"])
    pred = frame(aggravating_factor=["febrile"])
    assert score_pair(gold, pred, ExactMatcher())["non_canonical"]["f1"] == 0.0
    assert score_pair(gold, pred, m)["non_canonical"]["f1"] == 1.0


def test_make_matcher_rejects_unknown_and_incomplete():
    with pytest.raises(ValueError, match="unknown matcher"):
        make_matcher("fuzzy")
    with pytest.raises(ValueError, match="--llm-url"):
        make_matcher("llm")


@pytest.mark.slow
def test_embedding_matcher_with_real_minilm():
    m = make_matcher("embedding")
    assert m.describe()["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    gold = frame(onset="few months ago", positive_characteristics=["wet cough"])
    pred = frame(onset="a couple of months ago", positive_characteristics=["dry cough"])
    r = score_pair(gold, pred, m)
    assert r["counts"]["non_canonical"] == {"tp": 1, "fp": 1, "fn": 1}  # onset paraphrase matched, dry != wet
    assert (
        m.similarity("few months ago", "a couple of months ago") >= m.threshold > m.similarity("wet cough", "dry cough")
    )


# ------------------------------------------------------------------------------------------------ llm matcher

SAME = {frozenset({"2 days ago", "two days before"}), frozenset({"dry or wet", "wet or dry"})}
ANSWERS = {"hedge": "Not positive.", "unsure": "maybe"}  # evasive judges: never a match


class FakeChatCompletions(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions deterministically from the two phrases in the prompt."""

    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        prompt = body["messages"][-1]["content"]
        a = prompt.split("Phrase 1: ")[1].split("\n")[0]
        b = prompt.split("Phrase 2: ")[1].split("\n")[0]
        if a == "boom":
            self.send_response(500)
            self.end_headers()
            return
        answer = "Positive." if frozenset({a, b}) in SAME else ANSWERS.get(a, "negative")
        out = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"],
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                       "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_endpoint():
    server = None
    for port in range(18200, 18300):
        try:
            server = ThreadingHTTPServer(("127.0.0.1", port), FakeChatCompletions)
            break
        except OSError:
            continue
    assert server is not None, "no free port in 18200-18299"
    FakeChatCompletions.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_llm_matcher_against_fake_openai_endpoint(fake_endpoint, tmp_path):
    cache = tmp_path / "llm_cache.json"
    m = LLMMatcher(fake_endpoint, "judge-model", cache=cache)
    gold = frame(onset="2 days ago", duration="constant")
    pred = frame(onset="Two days before", duration="on and off")
    r = score_pair(gold, pred, m)
    assert r["counts"]["non_canonical"] == {"tp": 1, "fp": 1, "fn": 1}
    assert r["matcher"]["name"] == "llm" and m.calls == 2
    first = FakeChatCompletions.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["body"]["model"] == "judge-model" and first["body"]["temperature"] == 0
    prompts = sorted(q["body"]["messages"][0]["content"] for q in FakeChatCompletions.requests)
    assert prompts[0] == LLM_PROMPT.format(a="2 days ago", b="two days before")
    assert prompts[0].startswith("You are an expert in the English language. Your task is identifying whether two "
                                 "phrases have similar meanings.")
    assert prompts[0].endswith("Phrase 1: 2 days ago\nPhrase 2: two days before\nAnswer (positive/negative):")

    # POL check values go through the same matcher; the cache answers repeated questions without a request
    pol_gold = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [
        {"type": "characteristics", "values": ["dry or wet"]}]}]}]
    pol_pred = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [
        {"type": "characteristics", "values": ["wet or dry"]}]}]}]
    p = score_pol_lenient([Example("pol", "d", 2, [], [], pol_gold, state={})], {("d", 2): pol_pred}, m)
    assert p["joint_accuracy"] == 1.0 and p["precision_at_k"]["1"] == 1.0
    n_requests = len(FakeChatCompletions.requests)
    score_pair(gold, pred, m)
    assert len(FakeChatCompletions.requests) == n_requests

    m.save()
    reloaded = LLMMatcher(fake_endpoint, "judge-model", cache=cache)
    assert reloaded.same("2 days ago", "two days before") and reloaded.calls == 0

    with pytest.raises(ConnectionError, match="chat/completions"):
        m.same("boom", "bang")


def free_port() -> int:
    for port in range(18299, 18199, -1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port  # closed again: nothing listens there
    raise AssertionError("no free port in 18200-18299")


def test_llm_matcher_reports_unreachable_endpoint():
    m = LLMMatcher(f"http://127.0.0.1:{free_port()}/v1", "judge-model", timeout=2)
    with pytest.raises(ConnectionError):
        m.same("a", "b")


def test_llm_verdicts_are_parsed_strictly():
    assert parse_verdict("Positive.") is True and parse_verdict(" negative") is False
    assert parse_verdict("Not positive.") is None and parse_verdict("maybe positive") is None
    assert parse_verdict("") is None


def test_llm_matcher_asks_concurrently_reads_strictly_and_keys_its_cache_by_endpoint_and_model(fake_endpoint, tmp_path):
    cache = tmp_path / "llm_cache.json"
    m = LLMMatcher(fake_endpoint, "judge-model", cache=cache, concurrency=4)
    assert not m.same("hedge", "hedges") and not m.same("unsure", "not sure")  # "Not positive." is no yes
    assert m.unparsed == 2
    m.prefetch([("2 days ago", "two days before"), ("dry or wet", "wet or dry"), ("a", "b"), ("c", "d")])
    assert m.calls == 6 and m.same("a", "b") is False and m.calls == 6  # the prefetched answer, no new request
    m.save()
    other_model = LLMMatcher(fake_endpoint, "another-judge", cache=cache)
    assert not any(k.startswith(json.dumps([fake_endpoint, "another-judge"])[:-1]) for k in other_model.answers)
    other_model.same("2 days ago", "two days before")
    assert other_model.calls == 1  # a different judge asks again instead of reusing another model's verdict
