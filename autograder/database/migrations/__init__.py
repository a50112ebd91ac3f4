"""Alembic's migrations of ``autograder.database.tables`` (run by ``autograder.database.migrate``)."""
