"""Alembic's entry point: run the migrations on the connection ``migrate.py`` hands over,
inside its transaction (so a failed step leaves the database as it was)."""

from alembic import context

from autograder.database.tables import metadata

context.configure(connection=context.config.attributes["connection"], target_metadata=metadata,
                  render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
