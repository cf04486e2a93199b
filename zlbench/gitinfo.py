"""Commit and dirty state of a checkout, through gitpython (no other zlbench imports)."""

from __future__ import annotations

from pathlib import Path


def git_state(path: str | Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty) of the git checkout holding ``path``, else (None, None).

    A path the enclosing checkout ignores is not that checkout's code (a snapshot
    or a FlagGems copy kept in an ignored folder of another repo): (None, None)."""
    try:
        import git

        repo = git.Repo(Path(path), search_parent_directories=True)
        if repo.ignored(str(Path(path).resolve())):
            return None, None
        return repo.head.commit.hexsha, repo.is_dirty(untracked_files=False)
    except Exception:  # noqa: BLE001 - not a checkout, no git binary, empty repo...
        return None, None
