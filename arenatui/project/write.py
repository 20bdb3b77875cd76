"""Editing a user's project file in place: values change, everything else (comments, layout, line endings, mode,
owner, a symlink) stays as the user left it.

The edit is done by `tomlkit` (style-preserving TOML): it keeps comments, ordering, inline tables and multi-line
strings, so there is no hand-written line parser that refuses layouts it cannot follow. The result is checked by
parsing it with `tomllib`: it must equal the original with exactly the requested values changed, else nothing is
written. Writing goes to a temporary file beside the target with the target's mode and owner, then a rename, so a
crash mid-write never leaves half a project file (where the owner cannot be kept, e.g. another user's file we may
write but not chown, the file is rewritten in place instead: owner kept, atomicity lost).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arenatui.kernel.errors import ConfigError

_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


@dataclass(frozen=True, slots=True)
class Written:
    """Where an edit went: `target` is the regular file written; `link` is the symlink named, if one was."""

    target: Path
    link: Path | None = None

    def describe(self) -> str:
        return f"{self.target} (through the symlink {self.link})" if self.link else str(self.target)


def writable_target(project: str | Path) -> tuple[Path, Path | None]:
    """The regular file an edit of `project` would write and the symlink named (if any); refuses a read-only file
    with a `ConfigError`. Checked before any work so `arena tune --write` does not tune for minutes, then refuse."""
    from arenatui.project.read import resolve_project_path

    named = resolve_project_path(project)
    link = named if named.is_symlink() else None
    target = named.resolve() if link else named
    try:
        st = target.stat()
    except OSError as e:
        raise ConfigError(str(named), None, f"cannot be edited ({e})") from None
    # root passes os.access on any file: a file with no write bit at all is read-only by its owner's choice
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & _WRITE_BITS or not os.access(target, os.W_OK):
        what = "is not a regular file" if not stat.S_ISREG(st.st_mode) else "is read-only"
        raise ConfigError(str(target), None, f"{what}; arenatui does not overwrite it (make it writable, or set "
                          "the values by hand)")
    return target, link


def write_model_settings(project: str | Path, settings: dict[str, dict[str, Any]],
                         run: dict[str, Any] | None = None) -> Written:
    """Set the given keys of each `[[models]]` entry (by model key), and of `[run]`, in the project file in place."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    target, link = writable_target(project)
    try:
        raw = target.read_bytes()
        text = raw.decode("utf-8")
        before = tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, TOMLKitError) as e:
        raise ConfigError(str(target), None, f"cannot be edited ({e})") from None
    models = doc.get("models")
    done: set[str] = set()
    if isinstance(models, list):
        for m in models:
            key = m.get("key") if isinstance(m, dict) else None
            if isinstance(key, str) and key in settings:
                for name, value in settings[key].items():
                    m[name] = value
                done.add(key)
    if run:
        table = doc.get("run")
        if table is None:
            table = tomlkit.table()
            doc["run"] = table
        for name, value in run.items():
            table[name] = value
    by_hand = "; ".join(f"{k}: " + ", ".join(f"{n} = {v}" for n, v in kv.items())
                        for k, kv in (*settings.items(), *((("[run]", run),) if run else ())))
    missing = [k for k in settings if k not in done]
    if missing:
        raise ConfigError(str(target), "models", f"no [[models]] table with key {', '.join(map(repr, missing))}; "
                          f"set the values by hand: {by_hand}")
    new = _same_line_endings(text, tomlkit.dumps(doc))
    expected = dict(before)
    expected["models"] = [dict(m, **settings[m["key"]]) if m.get("key") in settings else m
                          for m in before.get("models", [])]
    if run:
        expected["run"] = dict(before.get("run", {}), **run)
    try:
        ok = tomllib.loads(new) == expected
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:  # a tomlkit bug must never cost the user their file
        raise ConfigError(str(target), "models", f"cannot be edited safely; set the values by hand: {by_hand}")
    _replace(target, new.encode("utf-8"))
    return Written(target, link)


def write_max_concurrency(project: str | Path, levels: dict[str, int]) -> Written:
    """Record each model's `max_concurrency` (what `arena tune --write` does)."""
    return write_model_settings(project, {k: {"max_concurrency": int(v)} for k, v in levels.items()})


def _same_line_endings(original: str, new: str) -> str:
    """tomlkit writes an added line with LF; a file whose every line ends CRLF keeps CRLF on the added ones too."""
    lf = original.count("\n")
    if lf and original.count("\r\n") == lf:
        return new.replace("\r\n", "\n").replace("\n", "\r\n")
    return new


def _replace(target: Path, data: bytes) -> None:
    """Write `data` to `target` keeping its mode and owner: a temporary file beside it, then a rename."""
    st = target.stat()
    fd, tmp_name = -1, ""
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".arena-tmp", dir=target.parent)
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            os.fchown(fd, st.st_uid, st.st_gid)
    except PermissionError:
        # a directory we cannot create files in, or an owner we may not give: rewrite in place (owner kept)
        if fd >= 0:
            os.close(fd)
            os.unlink(tmp_name)
        try:
            with open(target, "r+b") as f:
                f.write(data)
                f.truncate()
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise ConfigError(str(target), None, f"cannot be written ({e})") from None
        return
    except OSError as e:
        raise ConfigError(str(target), None, f"cannot be written ({e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise ConfigError(str(target), None, f"cannot be written ({e})") from None
