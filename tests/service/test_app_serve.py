"""``autograder serve`` as an admin runs it: it starts, serves its JWKS and the registration
values under the public URL it was given, and stops cleanly; ``--rotate-key`` adds a key, which
the running service publishes at once; a registration URL is printed only when asked for. (The rate limiter in front of every route:
tests/service/test_rate_limit.py.)"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.service.web import free_port, wait_for_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_serve_starts_serves_the_registration_values_and_stops(tmp_path: Path) -> None:
    port = free_port()
    public = "https://grader.example.edu"
    command = [sys.executable, "-m", "autograder", "serve", "--course", str(ROOT), "--public-url", public,
               "--data", str(tmp_path / "data"), "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        config = wait_for_server(f"http://127.0.0.1:{port}/lti/config", server)
        assert config.status_code == 200 and f"{public}/lti/login" in config.text
        [key] = httpx.get(f"http://127.0.0.1:{port}/lti/jwks").json()["keys"]
        # the one signing key, its public half only (no private exponent or primes), named by its kid
        assert key["kty"] == "RSA" and key["kid"] and {"n", "e"} <= set(key) and not {"d", "p", "q"} & set(key)
        rotated = subprocess.run([*command, "--rotate-key"], capture_output=True, text=True, check=False)
        assert rotated.returncode == 0 and "new signing key" in rotated.stdout
        # the running service publishes the new key beside the old one at once, no restart
        published = [k["kid"] for k in httpx.get(f"http://127.0.0.1:{port}/lti/jwks").json()["keys"]]
        assert published == [key["kid"], rotated.stdout.split()[-1]]
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    # no registration URL at start: it would sit in the logs, good for a day to anyone reading
    # them (issue 38); `serve --registration-url` prints one when the admin asks
    assert "/lti/register/" not in err and f"{public}/lti/config" in err
    asked = subprocess.run([*command, "--registration-url"], capture_output=True, text=True, check=True)
    assert asked.stdout.strip().startswith(f"{public}/lti/register/")
    assert oct((tmp_path / "data" / "keys").stat().st_mode & 0o777) == "0o700"

