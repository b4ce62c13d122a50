"""Simulated interviews (``medhx simulate``): case cards, patient simulators, coverage, the runner.

Every interview here runs the real compiled graph with a real SQLite session store: the embedded default agent
(clinical NLU, questionnaire policy, template NLG), the tiny random Llama in process (``hf``) as an LLM-played
patient, and (``-m vllm``) the real vLLM CPU server behind both the agent's NLU and the patient. The misbehaving
patients below (silent, 10 KB, self-contradicting) are simulators, the boundary the runner is built to survive;
what is under test is the agent and the runner around them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from graph_fixtures import REPO, assert_cmas_valid, medhx_env, run_medhx

from agent.cli import main as medhx_main
from agent.core import cmas
from agent.core.data import load_dialogues
from agent.core.ontology import default_vocabulary
from agent.core.protocol import TurnContext
from agent.core.safety import MAX_PATIENT_CHARS, check_red_flags
from eval.runs.cases import (
    PRESENTATIONS,
    CaseCard,
    CaseError,
    card_from_dialogue,
    covered,
    load_card,
    load_cards,
    state_facts,
    supported,
)
from eval.runs.simulate import ResultsFile, prepare, run
from eval.runs.simulate_metrics import coverage_counts, precision, rates
from eval.runs.simulators import (
    AgendaSimulator,
    ClinicalJudge,
    DoctorTurn,
    LLMSimulator,
    OracleNLU,
    PatientReply,
    close_channel,
    open_channel,
)

CASES = REPO / "data" / "cases"
VOCAB = default_vocabulary()

THREE_FACTS = {
    "id": "three-facts",
    "title": "A cough for two weeks, no fever",
    "domain": "respiratory",
    "chief_complaint": ["coughing"],
    "state": {"positive_symptom": [{"value": "coughing", "onset": "two weeks ago"}],
              "negative_symptom": [{"value": "fever"}]},
}


def write_card(tmp_path: Path, card: dict, name: str | None = None) -> Path:
    path = tmp_path / f"{name or card['id']}.yaml"
    path.write_text(yaml.safe_dump(card, sort_keys=False))
    return path


def write_sim_config(tmp_path: Path, cases: list[str], **extra: object) -> Path:
    cfg = {"agents": [{"name": "default", "config": str(REPO / "configs" / "default.yaml")}], "cases": cases,
           "output_dir": str(tmp_path / "run"), "workers": 2, **extra}
    path = tmp_path / "simulate.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def ask(*items: tuple[str, str, list[dict] | None]) -> DoctorTurn:
    action: dict = {"action": "inquire"}
    for base, value, checks in items:
        action.setdefault(base, []).append({"value": value, **({"checks": checks} if checks else {})})
    return DoctorTurn("(doctor)", [action], 2)


# --------------------------------------------------------------------------- case cards


def test_shipped_cards_are_valid_cover_the_domains_and_agree_with_the_red_flag_rules():
    cards = load_cards([CASES])
    assert len(cards) >= 40
    assert {"respiratory", "musculoskeletal", "cardiac", "gastro", "mental health", "neurological", "genitourinary",
            "infection"} <= {c.domain for c in cards}
    flagged = {f for c in cards for f in c.red_flags}
    assert {"hemoptysis", "suicidal_ideation"} <= flagged
    for card in cards:
        # the rules, run on the card's own gold state, raise exactly what the card expects
        assert sorted(f.id for f in check_red_flags(card.state)) == sorted(card.red_flags), card.id
        assert card.notes.strip(), f"{card.id}: every card carries its clinical review note"
        assert card.chief_complaint and card.facts()
    # every card names its presenting-complaint class, and every class has at least two cards of different diagnoses
    assert all(c.presentation in PRESENTATIONS for c in cards), [c.id for c in cards if c.presentation is None]
    for presentation in PRESENTATIONS:
        diagnoses = {c.diagnosis for c in cards if c.presentation == presentation and c.diagnosis}
        assert len(diagnoses) >= 2, (presentation, diagnoses)


@pytest.mark.parametrize(("change", "message"), [
    ({"state": {"positive_symptom": [{"value": "coughing", "colour": "red"}]}}, "colour"),
    ({"state": {"positive_symptom": [{"value": "a sense of doom"}]}}, "not in the vocabulary"),
    ({"state": {"positive_symptom": [{"value": "coughing", "progression": "worse"}]}}, "progression"),
    ({"chief_complaint": ["fever"]}, "chief_complaint"),
    ({"red_flags": ["no_such_rule"]}, "no_such_rule"),
    ({"presentation": "toothache"}, "presentation"),
    ({"surprise": 1}, "surprise"),
])
def test_a_bad_card_fails_with_the_file_and_the_key(tmp_path, change, message):
    path = write_card(tmp_path, {**THREE_FACTS, **change})
    with pytest.raises(CaseError) as err:
        load_card(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_a_card_from_a_meditod_dialogue_is_its_gold_final_state():
    d = {x.dialog_id: x for x in load_dialogues(REPO / "data" / "meditod")}["115"]
    card = card_from_dialogue(d, "respiratory")
    last = [u.dialog_state for u in d.utterances if u.speaker == "patient" and u.dialog_state][-1]
    assert card.state == last
    assert card.chief_complaint == ["coughing", "dyspnea"]  # the first informative patient turn
    assert card.diagnosis == "chronic bronchitis" and card.source == "meditod:115"


# --------------------------------------------------------------------------- facts and coverage, by hand


def test_coverage_and_precision_hand_checked_on_a_three_fact_card():
    card = CaseCard.model_validate(THREE_FACTS)
    facts = {f.label(): f for f in card.facts()}
    assert set(facts) == {"positive_symptom coughing", "positive_symptom coughing onset=two weeks ago",
                          "negative_symptom fever"}
    # the agent heard "shortness of breath"-style synonyms and free text its own way:
    state = {"positive_symptom": [{"value": "coughing", "onset": "for two weeks now"}, {"value": "headache"}],
             "negative_symptom": [{"value": "chills"}]}
    counts, missed = coverage_counts(card, state, VOCAB)
    # head (canonical) yes, onset (free text: "two", "weeks" occur) yes, fever (canonical, negative) no
    assert counts["canonical"] == [1, 2] and counts["non_canonical"] == [1, 1]
    assert counts["positive"] == [2, 2] and counts["negative"] == [0, 1] and counts["overall"] == [2, 3]
    assert [f.label() for f in missed] == ["negative_symptom fever"]
    assert rates(counts)["canonical"] == 0.5
    # state facts: cough, its onset, headache (the card does not have it), chills denied (the card lacks chills,
    # and the simulated patient denies what its card lacks): 3 of 4 supported
    p = precision(card, state, VOCAB)
    assert (p["supported"], p["total"], p["unsupported"]) == (3, 4, ["positive_symptom headache"])
    # status matters: a fever recorded as positive neither covers the negative fact nor is supported
    flipped = {"positive_symptom": [{"value": "fever"}]}
    assert not covered(facts["negative_symptom fever"], flipped, VOCAB)
    assert not supported(state_facts(flipped)[0], card.state, VOCAB)
    # a concept by another name is the same concept (vocabulary): "shortness of breath" is dyspnea
    dys = CaseCard.model_validate({**THREE_FACTS, "chief_complaint": ["dyspnea"],
                                   "state": {"positive_symptom": [{"value": "dyspnea"}]}})
    assert covered(dys.facts()[0], {"positive_symptom": [{"value": "shortness of breath"}]}, VOCAB)


def test_three_fact_card_through_the_real_graph_both_modes(tmp_path):
    path = write_sim_config(tmp_path, [str(write_card(tmp_path, THREE_FACTS))])
    summary = run(path, progress=False)
    case = summary["cases"][0]
    for mode in ("end_to_end", "oracle"):
        m = case[mode]
        assert m["turns"]["ended_by"] == "policy" and not m.get("error")
        # the questionnaire asks when the cough started and screens for fever: all three facts, by hand
        assert m["coverage"]["counts"]["overall"] == [3, 3], (mode, m["missed"])
    assert summary["overall"]["oracle_coverage"]["canonical"] == 1.0
    assert summary["overall"]["coverage"]["non_canonical"] == 1.0


# --------------------------------------------------------------------------- the agenda simulator


def test_agenda_patient_answers_from_its_card_with_gold_frames():
    card = load_card(CASES / "cardiac-exertional-chest-pain.yaml")
    sim = AgendaSimulator(card, seed=0)
    opening = sim.respond(DoctorTurn("What brings you in?", [{"action": "nod_prompt_salutations"}], 0))
    assert opening.frames[0]["slots"]["positive_symptom"][0]["value"] == "chest pain"
    reply = sim.respond(ask(("symptom", "chest pain", [{"type": "ana_factors"}]), ("symptom", "fever", None)))
    slots = reply.frames[0]["slots"]
    assert slots["positive_symptom"][0]["aggravating_factor"] == ["physical exertion", "cold weather"]
    assert slots["positive_symptom"][0]["alleviating_factor"] == ["rest"]
    assert slots["negative_symptom"] == [{"value": "fever"}]  # not on the card: denied
    reply = sim.respond(ask(("symptom", "dyspnea", None), ("family_history", "heart diseases", None)))
    slots = reply.frames[0]["slots"]
    assert slots["negative_symptom"] == [{"value": "dyspnea"}]  # the card's pertinent negative
    # a broad question answered with the specific condition the patient knows of
    assert slots["positive_family_history"] == [{"value": "myocardial infarction", "relation": "father"}]
    unknown = AgendaSimulator(load_card(CASES / "cardiac-palpitations.yaml"), seed=0)
    unknown.respond(DoctorTurn("Hello", [{"action": "nod_prompt_salutations"}], 0))
    assert unknown.respond(ask(("family_history", "heart diseases", None))).frames[0]["slots"] == \
        {"unknown_family_history": [{"value": "heart diseases"}]}
    for r in (opening, reply):
        assert cmas.parse_nlu(r.frames) == r.frames


def test_a_retired_patient_says_so_and_when():
    """A card's occupation with status false and a 'when' ("retired", "retired eleven years ago") is said as a person
    says it, with the when in the gold frame, whether or not the question asked when."""
    cards = (("cardiac-exertional-syncope", "retired"), ("cardiac-heart-failure", "retired eleven years ago"))
    for name, when in cards:
        sim = AgendaSimulator(load_card(CASES / f"{name}.yaml"), seed=0, volunteer_p=0.0)
        sim.respond(DoctorTurn("Hello", [{"action": "nod_prompt_salutations"}], 0))
        reply = sim.respond(ask(("occupation", "other", None)))
        told = [it for f in reply.frames for it in f["slots"].get("occupation", [])]
        assert any(it.get("status") == "false" and it.get("when") == when for it in told), told
        assert "retired" in reply.text


def test_whether_and_how_much_gets_the_yes_then_the_amount():
    """"Do you smoke or drink? And if you do, how much?" (status checks): a smoker says so, then how much and since
    when; a habit the card denies gets its no, never an amount."""
    sim = AgendaSimulator(load_card(CASES / "resp-hemoptysis-smoker.yaml"), seed=0, volunteer_p=0.0,
                          short_answer_p=0.0)
    sim.respond(DoctorTurn("Hello", [{"action": "nod_prompt_salutations"}], 0))
    status_freq = [{"type": "status"}, {"type": "frequency"}]
    reply = sim.respond(ask(("habit", "smoking", [*status_freq, {"type": "starting"}]),
                            ("habit", "cocaine", status_freq)))
    told = {it["value"]: (f["slots"], it) for f in reply.frames for slot, items in f["slots"].items()
            for it in items if slot.endswith("habit")}
    smoking = [it for f in reply.frames for it in f["slots"].get("positive_habit", []) if it["value"] == "smoking"]
    assert {"frequency", "starting"} <= {k for it in smoking for k in it}, smoking
    amount = ("pack", "day")  # the yes comes first, in words of smoking, before the amount
    first = min(reply.text.casefold().find(w) for w in amount if w in reply.text.casefold())
    assert "smok" in reply.text.casefold()[:first], reply.text
    assert "cocaine" in told and "negative_habit" in told["cocaine"][0] and set(told["cocaine"][1]) == {"value"}


def test_agenda_wording_varies_with_the_seed_not_its_facts():
    card = load_card(CASES / "resp-hemoptysis-smoker.yaml")
    turns = [DoctorTurn("Hello", [{"action": "nod_prompt_salutations"}], 0),
             ask(("symptom", "coughing", [{"type": "onset"}, {"type": "characteristics"}])),
             ask(("habit", "smoking", None), ("habit", "alcohol abuse", None)),
             ask(("occupation", "other", None))]

    def interview(seed: int, volunteer: float) -> list[PatientReply]:
        sim = AgendaSimulator(card, seed=seed, volunteer_p=volunteer, short_answer_p=0.0)
        return [sim.respond(t) for t in turns]

    a, again = interview(1, 0.0), interview(1, 0.0)
    assert [r.text for r in a] == [r.text for r in again]  # seeded: reproducible
    texts = {tuple(r.text for r in interview(seed, 0.0)) for seed in range(6)}
    assert len(texts) > 1  # the lexicon's variants: not one template read backwards
    for seed in range(6):  # the opening's extra onset is optional; the answers' facts are not
        assert [r.frames for r in interview(seed, 0.0)[1:]] == [r.frames for r in a[1:]]
    assert any(len(r.frames[0]["slots"]) > 1 or len(next(iter(r.frames[0]["slots"].values()))) > 1
               for r in a[1:])  # multi-fact answers


# --------------------------------------------------------------------------- the oracle NLU


def test_oracle_nlu_hands_over_the_frame_of_that_utterance_only():
    channel = open_channel("test-oracle")
    try:
        frames = [{"intent": "inform", "slots": {"negative_symptom": [{"value": "fever"}]}}]
        channel.put("No fever.", frames)
        nlu = OracleNLU(channel="test-oracle")
        out = nlu.understand(TurnContext(turns=[("doctor", "Any fever?"), ("patient", "No fever.")]))
        assert out.value == frames and out.format_error is None
        again = nlu.understand(TurnContext(turns=[("doctor", "Any fever?"), ("patient", "No fever.")]))
        assert again.value == [] and again.format_error  # taken once; never a guess
    finally:
        close_channel("test-oracle")


# --------------------------------------------------------------------------- the CLI, the results file


def test_medhx_simulate_json_resumes_and_recomputes_a_bad_line(tmp_path):
    cards = [str(CASES / "resp-hemoptysis-smoker.yaml"), str(CASES / "msk-knee-osteoarthritis.yaml")]
    config = write_sim_config(tmp_path, cards)
    out = run_medhx("simulate", "--config", str(config), "--json", env=medhx_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    cov, oracle = summary["overall"]["coverage"], summary["overall"]["oracle_coverage"]
    for c in (cov, oracle):
        assert 0 < c["canonical"] <= 1 and 0 <= c["non_canonical"] <= 1
    # with gold frames nothing the patient said goes unread (the two modes may still ask different questions, so
    # their coverage can differ either way: a different state leads the policy elsewhere)
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    for r in results:
        unread = [m["fact"] for m in r["metrics"]["missed"] if m["reason"] == "said, not understood"]
        assert r["mode"] != "oracle" or not unread, (r["key"], unread)
    assert summary["run"]["ran_now"] == 4 and "simulated interviews" in out.stderr  # the progress bar
    hemo = next(c for c in summary["cases"] if c["case"] == "resp-hemoptysis-smoker")
    assert hemo["oracle"]["red_flags"]["missed"] == []  # both expected flags raised once the state holds them
    dx = hemo["oracle"]["diagnosis"]  # the clinician's summary ranks the card's diagnosis; nothing said aloud
    assert dx["expected"] == "pulmonary neoplasm" and dx["spoken"] == []
    assert dx["match"] and dx["rank"] <= 3 and dx["offered"][dx["rank"] - 1] == "pulmonary neoplasm"
    run_dir = tmp_path / "run"
    for name in ("summary.json", "report.md", "coverage.png", "results.jsonl"):
        assert (run_dir / name).stat().st_size > 0
    assert "| default | oracle |" in (run_dir / "report.md").read_text()
    # every stored interview is a real session, strict CMAS throughout
    from agent.app.sessions import SessionStore

    sessions = run_dir / "sessions" / "default-oracle-w0"
    with SessionStore({"nlu": {"kind": "clinical"}, "policy": {"kind": "questionnaire"}, "nlg": {"kind": "template"},
                       "session": {"store": "sqlite", "dir": str(sessions)}}) as store:
        from agent.app.sessions import Session

        some = [i for i in store.list_sessions()]
        assert some and all(i.status in ("closed", "budget_reached") for i in some)
        assert_cmas_valid(Session(store, some[0].session_id).state())

    # the same command again: nothing rerun, the same figures
    again = run(config, progress=False)
    assert again["run"]["ran_now"] == 0 and again["overall"]["coverage"] == cov
    # a torn line (a kill mid-write) is reported and its interview recomputed
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    (run_dir / "results.jsonl").write_text("\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2]]) + "\n")
    third = run(config, progress=False)
    assert third["run"]["ran_now"] == 1 and any("unreadable" in p for p in third["run"]["problems"])
    assert third["overall"]["coverage"] == cov and third["overall"]["oracle_coverage"] == oracle
    assert len(ResultsFile(run_dir / "results.jsonl").load()[0]) == 4


def test_bad_simulate_config_is_an_error_in_words(tmp_path, capsys):
    config = write_sim_config(tmp_path, [str(CASES)], simulator={"kind": "agenda", "volunteer": 0.5})
    assert medhx_main(["simulate", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert "medhx simulate: error:" in err and "volunteer" in err and "Traceback" not in err


def test_shipped_simulate_configs_load():
    q = prepare(REPO / "configs" / "simulate" / "questionnaire.yaml")
    assert list(q.agents) == ["questionnaire"] and len(q.cards) >= 12  # data/cases + the MediTOD dialogues
    assert {c.source for c in q.cards} >= {"hand-written", "meditod:115", "meditod:317"}
    compare = prepare(REPO / "configs" / "simulate" / "compare.yaml")
    assert {"questionnaire", "hybrid", "model"} <= set(compare.agents)
    assert compare.agents["hybrid"]["policy"]["kind"] == "hybrid"


# --------------------------------------------------------------------------- patients that misbehave


class SilentPatient:
    """Never says anything."""

    def __init__(self, card: CaseCard, seed: int):
        pass

    def respond(self, doctor: DoctorTurn) -> PatientReply:
        return PatientReply("", [{"intent": "inform"}], {"simulator": "silent"})


class VerbosePatient(AgendaSimulator):
    """Answers truthfully, then keeps talking: 10 KB a reply."""

    def respond(self, doctor: DoctorTurn) -> PatientReply:
        reply = super().respond(doctor)
        padding = " And another thing about my week, which was long." * 400
        return PatientReply((reply.text + padding)[:10240], reply.frames, reply.meta)


class ContradictingPatient(AgendaSimulator):
    """Opens with its complaint, then denies it whenever asked anything about it."""

    def respond(self, doctor: DoctorTurn) -> PatientReply:
        reply = super().respond(doctor)
        if self.turns == 1:
            return reply
        return PatientReply("Actually, I don't have a cough at all.",
                            [{"intent": "inform", "slots": {"negative_symptom": [{"value": "coughing"}]}}], reply.meta)


@pytest.mark.parametrize("patient", ["SilentPatient", "VerbosePatient", "ContradictingPatient"])
def test_the_agent_keeps_going_and_the_report_says_what_happened(tmp_path, patient):
    config = write_sim_config(tmp_path, [str(write_card(tmp_path, THREE_FACTS))], max_turns=6, workers=1,
                              modes=["end_to_end"], simulator={"kind": f"test_simulate:{patient}"})
    summary = run(config, progress=False)
    m = summary["cases"][0]["end_to_end"]
    assert "error" not in m and m["turns"]["ended_by"] == "turn budget" and m["turns"]["doctor"] == 6
    events = m["events"]
    if patient == "SilentPatient":
        assert events["empty_replies"] == [1, 3, 5, 7, 9]  # every patient turn: the agent heard silence
        assert m["coverage"]["counts"]["overall"][0] == 0
        assert summary["agents"]["default"]["end_to_end"]["events"]["empty_replies"] == 5
    elif patient == "VerbosePatient":
        assert [e["chars"] for e in events["long_replies"]] == [10240] * 5
        assert {e["kept"] for e in events["long_replies"]} == {MAX_PATIENT_CHARS}
    else:
        assert events["contradictions"] == ["symptom cough: negative at turns [3, 5, 7, 9], positive at turns [1]"]
        assert m["coverage"]["counts"]["positive"][0] == 0  # the last word stands: the cough is denied
    report = (tmp_path / "run" / "report.md").read_text()
    assert "events:" in report


# --------------------------------------------------------------------------- the LLM-played patient


class ScriptedLLM:
    """A language model that always says the same invented thing (the model is the boundary here: the judge
    and the fallback around it are under test)."""

    def __init__(self, text: str):
        self.text, self.calls = text, 0

    def complete(self, messages: list[dict], json_schema: dict | None = None, max_tokens: int | None = None) -> str:
        self.calls += 1
        return self.text


def test_the_judge_flags_invented_facts_and_the_agenda_answer_replaces_them():
    card = load_card(CASES / "msk-knee-osteoarthritis.yaml")
    judge = ClinicalJudge()
    doctor = DoctorTurn("Any other symptoms?", [{"action": "inquire", "symptom": [{"value": "fever"}]}], 2)
    flagged, error = judge.invented("I've had a terrible headache and I take metformin.", doctor, card)
    assert error is None and set(flagged) == {"positive_symptom headache", "positive_medication metformin"}
    assert judge.invented("No, no fever.", doctor, card) == ([], None)

    model = ScriptedLLM("Yes, and I also have a rash and a headache.")
    sim = LLMSimulator(card, model, seed=0, judge=judge, retries=1)  # type: ignore[arg-type]
    sim.respond(DoctorTurn("Hello", [{"action": "nod_prompt_salutations"}], 0))
    reply = sim.respond(doctor)
    assert model.calls == 4  # each turn: the reply and one regeneration
    assert reply.meta["fallback"].startswith("agenda") and "positive_symptom headache" in reply.meta["invented"]
    assert reply.frames[0]["slots"] == {"negative_symptom": [{"value": "fever"}]} and reply.text == reply.meta["plan"]
    kept = LLMSimulator(card, model, seed=0, judge=judge, on_invention="keep")  # type: ignore[arg-type]
    kept.respond(DoctorTurn("Hello", [{"action": "nod_prompt_salutations"}], 0))
    assert kept.respond(doctor).text == model.text  # kept, and reported


def test_llm_patient_in_process_tiny_model(tmp_path, tiny_model_dir):
    config = write_sim_config(
        tmp_path, [str(CASES / "resp-viral-uri.yaml")], max_turns=4, workers=1,
        simulator={"kind": "llm", "backend": {"kind": "hf", "model": str(tiny_model_dir)},
                   "tokenizer": str(tiny_model_dir), "max_tokens": 12, "retries": 0, "judge": "clinical"})
    summary = run(config, progress=False)
    for mode in ("end_to_end", "oracle"):
        m = summary["cases"][0][mode]
        assert "error" not in m and m["turns"]["doctor"] == 4
    rec = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    patient = [t for r in rec for t in r["transcript"] if t["speaker"] == "patient"]
    assert patient and all(t["simulator"]["simulator"] == "llm" and t["simulator"]["attempts"] for t in patient)
    # random weights: whatever it said, the gold frames are the card's (the planner's), strict CMAS
    assert all(cmas.parse_nlu(t["gold"]) == t["gold"] for t in patient)


# --------------------------------------------------------------------------- real vLLM server


@pytest.mark.vllm
def test_simulated_interviews_on_the_vllm_server(tmp_path, vllm_server, tiny_model_dir):
    backend = {"kind": "vllm-server", "url": vllm_server, "tokenizer": str(tiny_model_dir), "concurrency": 4}
    agent = {"backends": {"m": backend},
             "nlu": {"kind": "model", "backend": "m", "adapter": "nlu", "max_tokens": 48},
             "policy": {"kind": "questionnaire"}, "nlg": {"kind": "template"},
             "safety": {"red_flags": str(REPO / "configs" / "red_flags.yaml")}}
    config = tmp_path / "simulate.yaml"
    config.write_text(yaml.safe_dump({
        "agents": [{"name": "llm-nlu", "config": agent}],
        "cases": [str(CASES / "resp-viral-uri.yaml"), str(CASES / "gastro-reflux.yaml")],
        "simulator": {"kind": "llm", "backend": {"kind": "vllm-server", "url": vllm_server},
                      "tokenizer": str(tiny_model_dir), "max_tokens": 12, "retries": 0},
        "max_turns": 3, "workers": 2, "output_dir": str(tmp_path / "run")}))
    summary = run(config, progress=False)
    assert summary["run"]["ran_now"] == 4
    rec = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    for r in rec:
        assert "error" not in r["metrics"] and r["metrics"]["turns"]["doctor"] == 3
    e2e = [t for r in rec if r["mode"] == "end_to_end" for t in r["transcript"] if t["speaker"] == "patient"]
    assert e2e and all(t["simulator"]["simulator"] == "llm" and t["simulator"]["attempts"] for t in e2e)
    assert summary["overall"]["coverage"]["counts"]["overall"][1] > 0
    from agent.app.sessions import Session, SessionStore

    with SessionStore({**agent, "session": {"store": "sqlite", "dir": str(tmp_path / "run" / "sessions" /
                                                                        "llm-nlu-end_to_end-w0")}}) as store:
        infos = store.list_sessions()
        assert infos
        for info in infos:  # end to end, the agent's NLU is the model on the server, every patient turn
            st = Session(store, info.session_id).state()
            assert_cmas_valid(st)
            assert all(t.meta.get("backend") == "vllm-server" for t in st.patient_turns()), st.patient_turns()
