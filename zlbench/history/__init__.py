"""The results store and what reads it (issue 52, docs/history.md): ``store.py``
(:func:`~zlbench.history.store.open_store`, the :class:`~zlbench.history.store.Store`
API), ``schema.py`` (tables, versions, migrations), ``backends.py`` (SQLite through
the stdlib, PostgreSQL through psycopg 3), ``record.py`` (a judged verdict -> the
run and rows kept), ``context.py`` (a judged row's usual noise from the store, for
the gate's report). Imports errors, models, protocol and the pure ``gate.noise``."""
