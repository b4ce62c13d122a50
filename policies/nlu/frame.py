"""The slots of one patient utterance while the clinical NLU builds them.

One home for "what this utterance says so far": the mention finder, the attribute reader and the short-answer
reader all write into one :class:`Frame`, which keeps one status per value (the later, more specific word wins) and
turns into CMAS slots at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.core import cmas

# A test's yes/no/unsure is said in CMAS as avail/unavail/unknown.
TEST_STATUS = {"negative": "unavail", "unknown": "unknown", "positive": "avail"}


def set_attr(item: dict, key: str, value: object) -> None:
    """Put ``value`` under ``key`` unless it is empty; lists grow (no repeats), scalars are replaced."""
    if value in (None, "", []):
        return
    if isinstance(value, list):
        merged = list(item.get(key) or [])
        merged.extend(v for v in value if v not in merged)
        item[key] = merged
    else:
        item[key] = value


@dataclass
class Frame:
    """The slots of one utterance while they are built: (prefix slot name, value) -> item."""

    items: dict[tuple[str, str], dict] = field(default_factory=dict)
    records: dict[str, dict] = field(default_factory=dict)
    elsewhere: set[tuple[str, str]] = field(default_factory=set)
    """(slot, value) said with both statuses at different places ("my tummy's sore, no back pain"): each status keeps
    its own item, so the denial of one place does not take the complaint of the other."""

    def item(self, base: str, value: str, status: str) -> dict:
        spec = cmas.SLOTS[base]
        if spec.statuses and status not in spec.statuses:
            status = TEST_STATUS.get(status, status) if base == "medical_test" else "positive"
        name = f"{status}_{base}"
        if (base, value) in self.elsewhere:
            return self.items.setdefault((name, value), {"value": value})
        for (n, v), it in list(self.items.items()):  # one status per value: the later, more specific word wins
            if v == value and n != name and n.endswith(f"_{base}"):
                self.items.pop((n, v))
                self.items[(name, value)] = it
                return it
        return self.items.setdefault((name, value), {"value": value})

    def held(self, base: str, value: str, status: str) -> dict:
        """The item of ``value`` if the frame holds it at ``status``, else a detached dict: the details of one mention
        ("Gerald says I smoked") go to its item only while its status stands; a later word may have changed it ("I've
        never smoked in my life"), and :meth:`item` would change it back."""
        spec = cmas.SLOTS[base]
        if spec.statuses and status not in spec.statuses:
            status = TEST_STATUS.get(status, status) if base == "medical_test" else "positive"
        return self.items.get((f"{status}_{base}", value), {})

    def rename(self, name: str, old: str, new: str) -> dict:
        """Give the item ``(name, old)`` the value ``new``, merged into an item already under that value."""
        item = self.items.pop((name, old))
        target = self.items.setdefault((name, new), {"value": new})
        for k, v in item.items():
            if k != "value":
                set_attr(target, k, v)
        return target

    def record(self, base: str) -> dict:
        return self.records.setdefault(base, {})

    def slots(self) -> dict:
        out: dict[str, list] = {}
        for (name, _), item in self.items.items():
            out.setdefault(name, []).append(item)
        for base, rec in self.records.items():
            if rec:
                out[base] = [rec]
        return out
