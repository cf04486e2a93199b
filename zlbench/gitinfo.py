"""Commit and dirty state of a checkout, through gitpython (no other zlbench imports)."""

from __future__ import annotations

from pathlib import Path


def git_state(path: str | Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty) of the git checkout holding ``path``, else (None, None).

    A path holding no file the enclosing checkout tracks is not that checkout's code
    (a snapshot or a FlagGems copy kept in an ignored or untracked folder of another
    repo, e.g. a device's copy of a working tree without its excludes): (None, None)."""
    try:
        import git

        repo = git.Repo(Path(path), search_parent_directories=True)
        if not repo.git.ls_files("--", str(Path(path).resolve())):
            return None, None
        return repo.head.commit.hexsha, repo.is_dirty(untracked_files=False)
    except Exception:  # noqa: BLE001 - not a checkout, no git binary, empty repo...
        return None, None
