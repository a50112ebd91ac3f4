"""Who launched the tool: the name, email and LTI roles each launch gave, per course context.

A course user who launched with a role that opens the instructor pages (``lti.INSTRUCTOR_ROLES``:
Moodle sends ``membership#Instructor`` to editing and non-editing teachers alike, as both hold
``mod/lti:manage``) is a marker: the markers page (``markers.py``) splits a week's marking among them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import select

from autograder.database import Database
from autograder.database.tables import service_users
from autograder.service.lti import INSTRUCTOR_ROLES


class Users:
    """The ``service_users`` table: shown to instructors, put on results."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def remember_user(self, context: str, user: str, name: str, email: str | None,
                      roles: Sequence[str] = ()) -> None:
        """Keep the name, email and roles a launch gave (the last launch's roles are the user's)."""
        with self.database.write() as db:
            db.execute(self.database.upsert(service_users, {"context": context, "user": user, "name": name,
                                                            "email": email, "roles": list(roles)},
                                            keys=("context", "user")))

    def user_name(self, context: str, user: str) -> str | None:
        with self.database.read() as db:
            return db.execute(select(service_users.c.name).where(service_users.c.context == context,
                                                                 service_users.c.user == user)).scalar()

    def user_names(self, context: str, users: Collection[str]) -> dict[str, str]:
        """The names of ``users`` of the course (user -> name) in one read, for a page that names
        a class (300 reads of ``user_name`` took ~60 ms); a user who never launched is left out."""
        if not users:
            return {}
        with self.database.read() as db:
            rows = db.execute(select(service_users.c.user, service_users.c.name).where(
                service_users.c.context == context, service_users.c.user.in_(sorted(set(users))))).all()
        return {user: name for user, name in rows if name}

    def markers(self, context: str) -> dict[str, str]:
        """The course's markers (user -> name, by name): whoever last launched with a role that
        opens the instructor pages."""
        with self.database.read() as db:
            rows = db.execute(select(service_users.c.user, service_users.c.name, service_users.c.roles)
                              .where(service_users.c.context == context)).all()
        chosen = [(name, user) for user, name, roles in rows if set(roles or ()) & set(INSTRUCTOR_ROLES)]
        return {user: name for name, user in sorted(chosen)}
