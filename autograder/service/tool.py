"""The LTI side of the service as one object: its keys, the platforms registered with it,
the login states, the launch checker and the score sender, kept under the service's data
folder (the login states and the registrations in ``lti.sqlite`` there, or in the service's
database when it has one: ``Settings.database``)."""

from __future__ import annotations

import secrets

import httpx

from autograder.service.keys import ToolKeys, create_private_once
from autograder.service.lti import AgsScoreSender, JwksCache, LaunchValidator, LoginStates, Platforms, ToolUrls
from autograder.service.settings import Settings


class Tool:
    """The LTI side of the service: keys, registrations, login states, the launch checker."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
        self.settings = settings
        self.urls = ToolUrls(settings.public_url)
        self.client = client or httpx.Client(follow_redirects=False)
        self.keys = ToolKeys(settings.data / "keys")
        self.states = LoginStates(settings.database or settings.data / "lti.sqlite")
        self.platforms = Platforms(self.states.database)  # the registrations live beside the login states
        self.platforms.import_file(settings.data / "platforms.json")  # a data folder from before they did
        self.validator = LaunchValidator(self.platforms, self.states, JwksCache(self.client))
        self.sender = AgsScoreSender(self.platforms, self.states, self.keys, self.client)
        # made once, read by every replica sharing the data folder (keys.create_private_once)
        self.session_secret = create_private_once(settings.data / "keys" / "session.secret",
                                                  lambda: secrets.token_bytes(32))
        # what ``GET /metrics`` asks for (routes/metrics.py), text to paste into a scraper's configuration
        self.metrics_token = create_private_once(settings.data / "keys" / "metrics.token",
                                                 lambda: secrets.token_urlsafe(32).encode()).decode()

    def new_registration_url(self) -> str:
        """The one URL a Moodle admin pastes: good for one registration within a day.

        Only who holds one may register a platform (otherwise anyone could point the tool at
        their own "LMS" and have it fetch URLs and grade for them). The code is in the path,
        not a query string, and spent by its first use, so a copy left in a log or a browser
        history registers nothing."""
        return f"{self.urls.register}/{self.states.new_registration_code()}"

