"""Helpers for the service's web tests: real servers on loopback, real TLS, a form-following client.

The tool runs over https with a certificate made here (its cookies are ``Secure``, as
behind the TLS proxy in production); the stand-in LMS runs over plain http on loopback.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from autograder.service.edge import EdgeLimits, uvicorn_config


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (certificate, key) files."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: Any, port: int, *, certificate: tuple[Path, Path] | None = None,
            limits: EdgeLimits | None = None) -> Iterator[str]:
    """Run ``app`` with uvicorn in a thread on 127.0.0.1:port, configured as ``autograder serve``
    configures it (the edge's connection cap and timeouts); yields its base URL."""
    config = uvicorn_config(app, host="127.0.0.1", port=port, limits=limits or EdgeLimits(), tls=certificate,
                            proxy_headers=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"{'https' if certificate else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_S)
    if thread.is_alive():
        raise RuntimeError(f"the test server on port {port} did not stop within {STOP_S} s: a request is still "
                           "running (uvicorn waits for every response in progress)")


STOP_S = 10.0  # a stopped test server's responses in progress must end within this


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append({"action": values.get("action", ""), "id": values.get("id", ""), "fields": {}})
        elif tag == "input" and self.forms and values.get("name") and values.get("type") != "file":
            if values.get("type") == "radio" and "checked" not in values:
                return
            self.forms[-1]["fields"][values["name"]] = values.get("value", "")


def forms(html: str) -> list[dict[str, Any]]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


class Browser:
    """An httpx client that, like a browser, follows redirects and submits auto-posting forms.

    ``keep_alive=False``: every request on a new connection (behind a load balancer that
    hands each connection to the next replica, each request then reaches another one)."""

    def __init__(self, verify: Path, *, keep_alive: bool = True) -> None:
        self.client = httpx.Client(verify=ssl.create_default_context(cafile=str(verify)), follow_redirects=True,
                                   timeout=30, limits=httpx.Limits(max_keepalive_connections=20 if keep_alive else 0))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.settle(self.client.get(url, **kwargs))

    def settle(self, response: httpx.Response) -> httpx.Response:
        """Submit auto-submitting forms (the LTI form posts) until a page that is not one."""
        for _ in range(5):
            if "document.getElementById" not in response.text or ".submit()" not in response.text:
                return response
            form = forms(response.text)[0]
            action = httpx.URL(str(response.url)).join(form["action"])
            response = self.client.post(action, data=form["fields"])
        return response

    def submit(self, page: httpx.Response, form_id: str, *, data: dict[str, str] | None = None,
               files: dict[str, Any] | None = None) -> httpx.Response:
        form = next(f for f in forms(page.text) if f["id"] == form_id)
        action = httpx.URL(str(page.url)).join(form["action"])
        return self.settle(self.client.post(action, data={**form["fields"], **(data or {})}, files=files))

    def close(self) -> None:
        self.client.close()


T = TypeVar("T")


def wait_for_server(url: str, process: subprocess.Popen[str], timeout: float = 60.0,
                    **options: Any) -> httpx.Response:
    """The first answer to GET ``url`` from a server ``process`` that is starting (``options``
    go to httpx); AssertionError with its output if it exits or does not answer in time."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=2, **options)
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.3)


def wait_until(check: Callable[[], T | None], timeout: float = 180.0) -> T:
    """``check()``'s first truthy value, polled every 0.3 s; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("timed out waiting")
