"""The live interview as one LangGraph state machine.

One compiled graph runs a whole interview, turn by turn::

    START -> policy -> nlg -> review -> speak -> patient -> nlu -> track -> safety -> policy -> ...
                                          \\-> END (the policy closed the interview, or the turn budget is spent)

``patient`` waits for the next patient utterance with ``interrupt()``; the caller
resumes it with ``Command(resume={"text": ..., "key": ..., "at": ...})`` (see
``agent.app.sessions``). ``review`` is a second interrupt, taken only when clinician
review is on. Every node's writes are checkpointed, so a killed process resumes a
pending turn exactly where it stopped.

Patient text is data: it reaches the patient state only as CMAS-valid NLU frames
(``agent.core.safety.admit_frames`` keeps the valid part; the rest is recorded, never applied).

Split by concern: the durable state and resume payloads live in ``agent.app.graph_state``, the
nodes and the module bundle (:class:`agent.app.graph_nodes.Agent`) in ``agent.app.graph_nodes``; this
file wires the graph and builds an agent from a config.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.app.graph_nodes import Agent, Nodes, after_speak
from agent.app.graph_state import InterviewState
from agent.core import safety
from policies.agent_config import check_agent_config, resolve_agent_paths
from policies.registry import build_modules, make_template_nlg

TURN_NODES = ("patient", "nlu", "track", "safety", "policy", "nlg", "review", "speak")
"""A turn's nodes in the order they run (the edges of :func:`build_graph`): the console reads it to say which node a
long turn is in and to order its timing table."""


def build_graph(agent: Agent | Callable[[], Agent], checkpointer: Any = None):
    """Compile the interview graph. ``agent`` may be a zero-argument factory, called on the
    first node that needs a module."""
    from langgraph.graph import START, StateGraph

    nodes = Nodes(agent)
    g = StateGraph(InterviewState)
    g.add_node("patient", nodes.patient)
    timed = {"nlu": nodes.nlu, "track": nodes.track, "safety": nodes.red_flag_check, "policy": nodes.policy,
             "nlg": nodes.nlg, "review": nodes.review}
    for name, fn in timed.items():
        g.add_node(name, nodes.timed(name, fn))
    g.add_node("speak", nodes.speak)
    g.add_edge(START, "policy")
    g.add_edge("patient", "nlu")
    g.add_edge("nlu", "track")
    g.add_edge("track", "safety")
    g.add_edge("safety", "policy")
    g.add_edge("policy", "nlg")
    g.add_edge("nlg", "review")
    g.add_edge("review", "speak")
    g.add_conditional_edges("speak", after_speak, ["patient", "__end__"])
    return g.compile(checkpointer=checkpointer)


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
            agent.red_flag_rules = safety.load_rules(Path(rules_path))
    except Exception:
        agent.close()
        raise
    return agent
