"""The live interview as one LangGraph state machine.

One compiled graph runs a whole interview, turn by turn::

    START -> policy -> nlg -> review -> speak -> patient -> nlu -> track -> safety -> policy -> ...
                                          \\-> END (the policy closed the interview, or the turn budget is spent)

``patient`` waits for the next patient utterance with ``interrupt()``; the caller
resumes it with ``Command(resume={"text": ..., "key": ..., "at": ...})`` (see
``agent.app.sessions``). ``review`` is a second interrupt, taken only when clinician
review is on. Sessions checkpoint at those interrupts, once per turn; a killed process
runs the turn again from the utterance stored before it started (``agent.app.sessions``).

A node sees the whole interview although a checkpoint holds only the turns not yet in the transcript table
(``agent.app.transcript``): the run's context (:class:`agent.app.graph_state.OnRecord`) brings the turns on record,
and each node is wrapped (:func:`on_record`) to see them before its state's own and to return only turns past them.

Patient text is data: it reaches the patient state only as CMAS-valid NLU frames
(``agent.core.safety.admit_frames`` keeps the valid part; the rest is recorded, never applied).

Split by concern: the durable state and resume payloads live in ``agent.app.graph_state``, the
nodes and the module bundle (:class:`agent.app.graph_nodes.Agent`) in ``agent.app.graph_nodes``; this
file wires the graph and builds an agent from a config.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

from agent.app.graph_nodes import Agent, Nodes, after_speak
from agent.app.graph_state import InterviewState, OnRecord, with_record
from agent.core import safety
from policies.agent_config import check_agent_config, resolve_agent_paths
from policies.registry import build_modules, make_template_nlg

TURN_NODES = ("patient", "nlu", "track", "safety", "policy", "nlg", "review", "speak")
"""A turn's nodes in the order they run: :func:`build_graph` draws its edges from it (each node to the next; the
last one back to the first, or to the end), and the console reads it to say which node a long turn is in and to
order its timing table."""

FIRST_NODE = "policy"
"""Where an interview starts: the doctor speaks first (the greeting), before any patient turn."""

TIMED_NODES = ("nlu", "track", "safety", "policy", "nlg", "review")
"""The nodes whose latency a turn records (``Nodes.timed``); ``patient`` waits for the patient, ``speak`` only
records the doctor turn."""


def build_graph(agent: Agent | Callable[[], Agent], checkpointer: Any = None):
    """Compile the interview graph. ``agent`` may be a zero-argument factory, called on the
    first node that needs a module."""
    from langgraph.graph import START, StateGraph

    nodes = Nodes(agent)
    run = {"patient": nodes.patient, "nlu": nodes.nlu, "track": nodes.track, "safety": nodes.red_flag_check,
           "policy": nodes.policy, "nlg": nodes.nlg, "review": nodes.review, "speak": nodes.speak}
    assert set(run) == set(TURN_NODES), "every node of TURN_NODES has a function, and only those"
    g = StateGraph(InterviewState, context_schema=OnRecord)
    for name in TURN_NODES:
        g.add_node(name, on_record(nodes.timed(name, run[name]) if name in TIMED_NODES else run[name]))
    g.add_edge(START, FIRST_NODE)
    for a, b in pairwise(TURN_NODES):
        g.add_edge(a, b)
    g.add_conditional_edges(TURN_NODES[-1], after_speak, [TURN_NODES[0], "__end__"])  # the next turn, or the end
    return g.compile(checkpointer=checkpointer)


def on_record(fn: Callable[[InterviewState], dict]) -> Callable[..., dict]:
    """``fn`` run on the whole interview: the turns on record (the run's :class:`OnRecord` context) joined to the
    state's, and of the ``turns`` it returns only those past the record kept, so what is on record is never written
    into a checkpoint again. A node changes only turns of its own run (``track`` the patient turn ``patient`` added),
    and runs end at an interrupt, so no turn on record is ever one a node changes."""

    def node(s: InterviewState, runtime: Any) -> dict:  # runtime: langgraph.runtime.Runtime[OnRecord]
        record = runtime.context.turns if runtime.context is not None else []
        if not record:
            return fn(s)
        update = fn(s.model_copy(update={"turns": with_record(record, s.turns)}))
        if "turns" in update:
            update["turns"] = [t for t in update["turns"] if t["index"] >= len(record)]
        return update

    node.__name__ = getattr(fn, "__name__", "node")
    return node


# --------------------------------------------------------------------------- config -> agent


def build_agent(config: dict) -> Agent:
    """The agent of a config: its four modules from the registry (``policies.registry``: nlu, dst, policy, nlg by
    ``kind``, built-in or a dotted path), the interview settings (``session``) and the red-flag rules (``safety``)."""
    config = resolve_agent_paths(config, Path.cwd())  # a mapping built in code; a loaded file's are absolute already
    checked = check_agent_config(config)  # unknown keys and bad values fail here, before anything is built
    session = checked.session
    max_turns = session.max_turns
    modules = build_modules(config)
    agent = Agent(**vars(modules), max_turns=max_turns, review=session.review, guard_nlg=make_template_nlg({}),
                  turn_deadline_s=session.turn_deadline_s)
    try:
        # red flags are on unless a config turns them off explicitly (safety.red_flags: null)
        rules_path = checked.safety.red_flags
        if rules_path:
            agent.red_flag_rules = safety.shared_rules(Path(rules_path))
    except Exception:
        agent.close()
        raise
    return agent
