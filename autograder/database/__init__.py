"""The one way the package opens a database: ``open_database(location)``.

``engine.py`` turns a URL or a file path into an engine (SQLite's WAL, busy timeout and
retry live there), ``tables.py`` is the schema in SQLAlchemy Core, ``migrate.py`` brings a
database to it with the Alembic migrations in ``migrations/`` (adopting a file made before
they existed). The gradebook, the service's store, the Moodle sync's state and the LTI
login states all open their database here.
"""

from autograder.database.engine import BUSY_TIMEOUT_S, Database
from autograder.database.migrate import open_database

__all__ = ["BUSY_TIMEOUT_S", "Database", "open_database"]
