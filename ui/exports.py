"""Exported files: written to the private data directory and served by the console's own owner-checked route.

An export (MediTOD JSON, the note, the printable note, the access log) is health data, so it is never handed to
Gradio (whose file route serves its shared temporary directory to any signed-in user who names a path, and whose
directory is world-readable). Instead:

- :class:`ExportFiles` writes it under ``<data dir>/exports`` (``ui.export_dir`` overrides): directories 0700,
  files 0600, written whole then renamed into place (a download never sees half a file), one directory per
  interview (named by a hash of its id, so no id can make a path), removed with the interview, and swept after
  ``ui.export_keep_minutes``;
- ``GET /export/{session_id}/{name}`` (:func:`install_export_route`) serves it after checking the signed-in
  clinician against the interview's owner (or the sharing setting): another clinician's export is 404, exactly
  like an interview that does not exist. A file swept away, or written by another console process on another
  machine, is written again from the store, so the link works on every replica.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import FileResponse, JSONResponse

from agent.app.sessions import SessionError
from ui.owners import USER_SCOPE_KEY

log = logging.getLogger(__name__)

EXPORT_SUFFIX = {"meditod": "meditod.json", "note": "note.md", "html": "note.html", "access": "access-log.json"}
"""Export format -> the end of its file name (``medhx-<session>-<suffix>``)."""
ROUTE = "export"
MEDIA_TYPE = {".json": "application/json", ".md": "text/markdown; charset=utf-8", ".html": "text/html; charset=utf-8"}
"""Served as attachments, never inline (``nosniff``): a printable note opens from the downloaded file."""


def download_name(session_id: str, fmt: str) -> str:
    return f"medhx-{session_id}-{EXPORT_SUFFIX[fmt]}"


def export_href(session_id: str, fmt: str) -> str:
    """The link to an export, relative to the console's page (so it works under a proxy's path prefix too)."""
    return f"{ROUTE}/{quote(session_id, safe='')}/{quote(download_name(session_id, fmt), safe='')}"


def format_of(session_id: str, name: str) -> str | None:
    """The export format a file name of ``session_id`` stands for (None: not one of its exports)."""
    return next((fmt for fmt in EXPORT_SUFFIX if name == download_name(session_id, fmt)), None)


class ExportFiles:
    """The private directory exports are written to."""

    def __init__(self, root: Path, keep_s: float):
        self.root = Path(root)
        self.keep_s = keep_s
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.root, 0o700)

    def folder(self, session_id: str) -> Path:
        return self.root / hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]

    def path(self, session_id: str, fmt: str) -> Path:
        return self.folder(session_id) / EXPORT_SUFFIX[fmt]

    def write(self, session_id: str, fmt: str, text: str) -> Path:
        """Write an export (0600 in a 0700 directory), replacing an older one whole."""
        folder = self.folder(session_id)
        folder.mkdir(exist_ok=True, mode=0o700)
        os.chmod(folder, 0o700)
        target = self.path(session_id, fmt)
        tmp = folder / f".{target.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
        return target

    def fresh(self, session_id: str, fmt: str) -> Path | None:
        """The export file, if it is there and younger than the keep time."""
        path = self.path(session_id, fmt)
        try:
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return None
        return path if age < self.keep_s else None

    def remove(self, session_id: str) -> None:
        """Every export of an interview (it was deleted)."""
        shutil.rmtree(self.folder(session_id), ignore_errors=True)

    def sweep(self) -> int:
        """Delete exports older than the keep time (and emptied folders); how many files went."""
        gone = 0
        now = time.time()
        for folder in self.root.iterdir():
            if not folder.is_dir():
                continue
            for f in folder.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    if now - f.stat().st_mtime >= self.keep_s:
                        f.unlink()
                        gone += 1
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        return gone


Download = Callable[[str, str, str], tuple[Path, str]]
"""(session id, clinician, file name) -> the file and its download name (:meth:`ui.console.Console.download`,
which checks the clinician against the interview's owner)."""


def install_export_route(app: Any, download: Download, anonymous_user: str) -> None:
    """``GET /export/{session_id}/{name}``: an export of an interview the signed-in clinician may see, as an
    attachment; 404 for anything else (another clinician's interview, no such interview, no such file name)."""

    @app.get(f"/{ROUTE}/{{session_id}}/{{name}}", include_in_schema=False)
    def export_file(session_id: str, name: str, request: Request) -> Any:
        user = request.scope.get(USER_SCOPE_KEY) or anonymous_user  # no login configured: loopback only
        try:
            path, filename = download(session_id, user, name)
        except (SessionError, ValueError) as exc:  # no such interview, not theirs, no such file: one answer
            log.info("export %s/%s refused for %s: %s", session_id, name, user, exc)
            return JSONResponse({"detail": "not found"}, status_code=404)
        except Exception:  # the store or the disk: said as such, never as "not found"
            log.exception("export %s/%s for %s failed", session_id, name, user)
            return JSONResponse({"detail": "the export failed; the interview is kept (see the console's log)"},
                                status_code=500)
        return FileResponse(path, filename=filename, content_disposition_type="attachment",
                            media_type=MEDIA_TYPE[path.suffix],
                            headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})
