"""The package layering, checked on the source: every ``import`` (function-local ones included) is an edge.

Layers, bottom to top:
- foundation (``agent``: CMAS, dialogue data, ontology and vocabulary, tracker, module protocol, clinical text,
  grounding, safety rules, paths): imports nothing from ``models/``, ``policies/``, ``eval/``, ``ui/`` or the
  application;
- ``models/`` (backends, prompts, LLM modules, training): the foundation, and the pure metric modules of ``eval/``
  (scoring an adapter on the valid split after training);
- ``policies/`` (NLU, policy, NLG implementations and the registry that builds them): the foundation and
  ``models/`` (for model-backed modules);
- ``eval/`` (metrics, prediction files, ``medhx bench``): the foundation, ``models/`` and ``policies/`` (it runs and
  scores the modules);
- the application (graph, sessions, chat, CLI, export, UI, and the whole-agent speed benchmarks): anything.
No module-level cycle anywhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "models", "policies", "eval", "ui")
APPLICATION = {"agent.app.graph", "agent.app.graph_nodes", "agent.app.sessions", "agent.app.sessions_cli", "agent.app.chat", "agent.cli", "agent.app.config", "agent.app.export",
               "eval.runs.bench_speed", "eval.runs.live_latency", "eval.runs.simulate", "eval.runs.load_bench", "eval.runs.generalisation"}
EVAL_METRICS = {"eval.metrics.score", "eval.metrics.matching", "eval.metrics.official", "eval.metrics.lenient", "eval.metrics.tuples", "eval.metrics.nlg",
                "eval.metrics.encoder"}


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            name = ".".join(f.relative_to(REPO).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = f
    return out


def layer(module: str) -> str:
    if module in APPLICATION or module.startswith("ui"):
        return "application"
    return module.split(".")[0] if module.split(".")[0] != "agent" else "foundation"


ALLOWED = {
    "foundation": {"foundation"},
    "models": {"foundation", "models"},
    "policies": {"foundation", "models", "policies"},
    "eval": {"foundation", "models", "policies", "eval"},
    "application": {"foundation", "models", "policies", "eval", "application"},
}


def edges() -> dict[str, set[str]]:
    known = modules()
    out: dict[str, set[str]] = {}
    for name, path in known.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                candidates = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            for c in candidates:
                while c and c not in known:  # "agent.core.cmas.parse_nlu" -> "agent.core.cmas"
                    c = c.rpartition(".")[0]
                if c and c != name and c not in PACKAGES:
                    targets.add(c)
        out[name] = targets
    return out


def test_imports_respect_the_layers():
    violations = []
    for src, targets in edges().items():
        for dst in targets:
            ok = layer(dst) in ALLOWED[layer(src)] or (layer(src) == "models" and dst in EVAL_METRICS)
            if not ok:
                violations.append(f"{src} ({layer(src)}) imports {dst} ({layer(dst)})")
    assert not violations, "\n".join(sorted(violations))


def test_no_import_cycles():
    graph = edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_foundation_is_what_the_layering_says():
    foundation = {m for m in modules() if layer(m) == "foundation"}
    assert {"agent.core.cmas", "agent.core.data", "agent.core.ontology", "agent.core.tracker", "agent.core.protocol"} <= foundation
