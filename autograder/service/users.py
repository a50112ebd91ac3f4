"""Who launched the tool: the name and email each launch gave, per course context."""

from __future__ import annotations

from sqlalchemy import select

from autograder.database import Database
from autograder.database.tables import service_users


class Users:
    """The ``service_users`` table: shown to instructors, put on results."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def remember_user(self, context: str, user: str, name: str, email: str | None) -> None:
        """Keep the name and email a launch gave."""
        with self.database.write() as db:
            db.execute(self.database.upsert(service_users, {"context": context, "user": user, "name": name,
                                                            "email": email}, keys=("context", "user")))

    def user_name(self, context: str, user: str) -> str | None:
        with self.database.read() as db:
            return db.execute(select(service_users.c.name).where(service_users.c.context == context,
                                                                 service_users.c.user == user)).scalar()
