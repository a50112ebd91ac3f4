"""How the service is reached and what it accepts: the values ``autograder serve`` fills in
from its options, read by the web app (``deps.SettingsDep``) and the LTI tool."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.service.claims import CLAIM_TTL_S
from autograder.service.edge import EdgeLimits


@dataclass(frozen=True)
class Settings:
    """How the service is reached and what it accepts; ``autograder serve`` fills it in."""

    public_url: str                      # the https URL the LMS and browsers use (the proxy's)
    data: Path                           # keys, registrations, uploads, pages (and by default the databases)
    tool_name: str = "ML autograder"
    upload_limit_bytes: int = 5 * 1024 * 1024
    requests_per_minute: int = 120       # per (issuer, user), every route
    uploads_per_minute: int = 6          # per (issuer, user), on top of the course's own minimum interval
    launches_per_minute: int = 1200      # per address (a campus NAT is one address for a whole class)
    edge: EdgeLimits = field(default_factory=EdgeLimits)  # connections, timeouts, body sizes
    # the one database for attempts, the queue, the outbox and the login states (a URL, e.g.
    # postgresql+psycopg://...); None: SQLite files in ``data`` (gradebook.sqlite, lti.sqlite)
    database: str | None = None
    # how long a dead replica's claims (attempts, score posts, sync leases) last before another takes them;
    # every replica on one database must use the same value (tests shorten it: docs/LMS.md)
    claim_ttl_s: float = CLAIM_TTL_S
