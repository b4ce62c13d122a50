"""The package layering, declared once: the import-linter layers contract in ``pyproject.toml``
(``[tool.importlinter]``), checked here by the real ``lint-imports`` with no exemptions. The layers, bottom to top:
foundation (``agent.core``) < ``models`` < ``policies`` < metrics (``eval.metrics``) < application (``agent.app``
and ``eval.runs``) < ``ui`` < the CLI entry point (``agent.cli``). A layers contract does not see cycles inside a
layer, so the acyclic check stays here, on the source: every ``import`` (function-local ones included) is an edge.
"""

from __future__ import annotations

import ast
import io
import os
import re
import shutil
import subprocess
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "models", "policies", "eval", "ui")


def modules(root: Path = REPO) -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in (root / pkg).rglob("*.py"):
            name = ".".join(f.relative_to(root).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = f
    return out


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


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the packages under ``root`` (a missing tool fails: it is in the dev extra)."""
    tool = shutil.which("lint-imports")
    assert tool, "lint-imports not found: pip install -e '.[dev]' (import-linter)"
    env = {**os.environ, "PYTHONPATH": str(root)}  # this checkout's packages, not an installed copy's
    return subprocess.run([tool, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_imports_respect_the_layers():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_the_contract_fails_on_an_import_that_climbs(tmp_path):
    """The three imports that climbed before the layers were declared (the application importing the console, the
    models importing the metrics), put back into a copy of the tree: ``lint-imports`` must fail on each."""
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    climbing = {"agent/app/chat.py": "from ui.launch import run_console",
                "agent/app/config.py": "from ui.settings import load_ui_settings",
                "models/train_card.py": "from eval.metrics.score import score"}
    for path, line in climbing.items():
        f = tmp_path / path
        f.write_text(f.read_text() + f"\n\ndef _climb():\n    {line}\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0 and "0 kept, 1 broken" in result.stdout, result.stdout + result.stderr
    for broken in ("agent.app.chat -> ui.launch", "agent.app.config -> ui.settings",
                   "models.train_card -> eval.metrics.score"):
        assert broken in result.stdout, result.stdout


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


def test_every_package_names_its_layer():
    """Each package's ``__init__.py`` opens with a line saying what the layer is and what it may import."""
    for pkg in ("agent", "agent/core", "agent/app", "models", "policies", "eval", "eval/metrics", "eval/runs", "ui"):
        doc = ast.get_docstring(ast.parse((REPO / pkg / "__init__.py").read_text()))
        assert doc and "layer" in doc.splitlines()[0].lower(), pkg


def test_the_foundation_is_what_the_layering_says():
    foundation = {m for m in modules() if m.startswith("agent.core.")}
    assert {"agent.core.cmas", "agent.core.data", "agent.core.ontology", "agent.core.tracker",
            "agent.core.protocol"} <= foundation


_DOTTED = re.compile(r"(?<![\w./-])((?:agent|models|policies|eval)(?:\.[A-Za-z_]\w*)+)")
_FILE_SUFFIXES = {"yaml", "yml", "json", "jsonl", "md", "txt", "csv", "png", "log", "db", "sqlite", "toml"}
_PATH = re.compile(r"(?<![\w./-])((?:agent|models|policies|eval|ui)/[\w/]*\.py)\b")


def _defined(path: Path) -> set[str]:
    """The top-level names of a module: what ``module.name`` in prose may name."""
    out: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            out |= {t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


def _prose(path: Path) -> list[str]:
    """What a reader reads: a Python file's strings and comments, a Markdown or YAML file whole."""
    text = path.read_text()
    if path.suffix != ".py":
        return text.splitlines()
    kinds = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type in kinds]


def test_prose_names_modules_that_exist():
    """Docstrings, comments, the README and config comments name modules and files by where they are now: a
    module that moved into ``agent/core/`` or ``eval/runs/`` leaves no reference to where it was."""
    known = modules()
    defined: dict[str, set[str]] = {}
    stale = []
    tracked = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.yaml"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    files = [REPO / f for f in tracked if (REPO / f).exists()]  # the project's files, not runs/ or a venv
    for f in files:
        for text in _prose(f):
            for ref in _DOTTED.findall(text):
                parts = ref.split(".")
                if parts[-1] in _FILE_SUFFIXES:  # a file name: ``agent.yaml``
                    continue
                at = max((i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in known), default=0)
                if at == len(parts):
                    continue
                module = ".".join(parts[:at])
                if at < 2 or parts[at] not in defined.setdefault(module, _defined(known[module])):
                    stale.append(f"{f.relative_to(REPO)}: {ref}")
            stale += [f"{f.relative_to(REPO)}: {p}" for p in _PATH.findall(text) if not (REPO / p).exists()]
    assert stale == [], "\n".join(stale)
