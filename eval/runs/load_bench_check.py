"""What ``medhx load-bench`` checks after a run: every client's record against the transcript the store holds.

Each patient turn was sent with an idempotency key of its own, and the store keeps the key with the turn, so the
comparison is per turn, not per count of texts:

- ``lost``: a turn whose ``send`` returned, but no stored patient turn has its key (or one does, and no doctor turn
  answers it: the patient was told nothing);
- ``duplicated``: a key stored more than once, or a stored patient turn whose key no client sent;
- ``altered``: the stored turn's text is not what was sent (after the cleaning every patient text gets);
- ``out_of_order``: sessions whose stored turns are not in the order the client sent them;
- ``missing_sessions``: interviews a client started that the store does not know.

A ``send`` that raised may or may not have been stored (the turn can fail after the utterance was kept); either
is correct, so it counts as an error, not as lost or duplicated. Also counted: which modules fell back, per turn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.app.graph_state import InterviewState
from agent.core.safety import clean_patient_text
from eval.runs.load_bench_clients import Opened, Sent


@dataclass
class Checked:
    sessions: int = 0
    lost: int = 0
    duplicated: int = 0
    altered: int = 0
    out_of_order: int = 0
    missing_sessions: int = 0
    fallbacks_by_module: Counter[str] = field(default_factory=Counter)

    def ok(self) -> bool:
        return self.lost == self.duplicated == self.altered == self.out_of_order == self.missing_sessions == 0


def check_transcripts(read: Callable[[str], InterviewState | None], sent: list[Sent],
                      opened: list[Opened]) -> Checked:
    """Compare what the clients sent with what ``read(session_id)`` (the stored session, None if absent) holds."""
    by_session: dict[str, list[Sent]] = {o.session: [] for o in opened if o.session}
    for s in sent:
        by_session.setdefault(s.session, []).append(s)
    out = Checked(sessions=len(by_session))
    for sid, sends in by_session.items():
        st = read(sid)
        if st is None:
            out.missing_sessions += 1
            out.lost += sum(s.error is None for s in sends)
            continue
        compare(st, sorted(sends, key=lambda s: s.at), out)
    return out


def compare(st: InterviewState, sends: list[Sent], out: Checked) -> None:
    """One session: its client's sends (in the order sent) against its stored turns; counts added to ``out``."""
    stored = st.patient_turns()
    keys = Counter(t.key for t in stored)
    sent_keys = {s.key for s in sends}
    out.duplicated += sum(n - 1 for n in keys.values() if n > 1) + sum(t.key not in sent_keys for t in stored)
    by_key = {t.key: t for t in stored}
    for s in sends:
        turn = by_key.get(s.key)
        if turn is None:
            out.lost += s.error is None
            continue
        if turn.text != clean_patient_text(s.text):
            out.altered += 1
        answered = turn.index + 1 < len(st.turns) and st.turns[turn.index + 1].speaker == "doctor"
        if s.error is None and not answered:
            out.lost += 1
    order = [s.key for s in sends if s.key in keys]
    if list(dict.fromkeys(t.key for t in stored if t.key in sent_keys)) != order:
        out.out_of_order += 1
    for t in st.doctor_turns()[1:]:
        fallback = t.meta.get("fallback")
        for module in fallback if isinstance(fallback, dict) else ():
            out.fallbacks_by_module[module] += 1
