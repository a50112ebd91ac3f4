"""The deployment docs/LMS.md shows, run as far as this machine allows (issue 38): real nginx and
real HAProxy (Debian's packages) in front of two real ``autograder serve`` replicas on one real
PostgreSQL database, each proxy configured with the snippet taken from the doc (only ports and
file paths substituted), so the doc is what is tested; the Compose files through
``docker-compose config`` and the systemd unit through ``systemd-analyze verify``.

What the proxies must show: requests reach both replicas and a learner's launch and upload go
through; HAProxy's ``/readyz`` check takes a stopped replica out of rotation and puts it back
when it answers again; nginx (open source: passive checks only) retries a GET that met a dead
replica on the other one but never re-sends a POST that reached it; and a POST that met a
dying replica gets deploy/proxy-error.html from either proxy, which tells the learner to look
at their attempts before sending again."""

from __future__ import annotations

import csv
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest
import yaml

from tests.helpers import PostgresServer, kill_alone
from tests.service.lms import Lms
from tests.service.lti_platform import PlatformState, create_platform
from tests.service.test_replicas import serve_command, upload_through_the_lms
from tests.service.web import free_port, make_certificate, serving, wait_until

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "LMS.md"
DOC_PORTS = ("8001", "8002")  # the replicas' ports in the doc's snippets
DOC_DEPLOY = "/srv/ml101/deploy"  # where the doc's snippets find deploy/proxy-error.html
# the page a proxy shows for a request no replica answered: its English and Japanese headings
PROXY_ERROR = ("The grading service did not answer", "採点サービスが応答しませんでした")
# Debian installs both proxies in /usr/sbin, which a non-root PATH may leave out
NGINX, HAPROXY = (shutil.which(name) or shutil.which(name, path="/usr/sbin") for name in ("nginx", "haproxy"))


def doc_block(language: str, containing: str) -> str:
    """The one code block of docs/LMS.md fenced as ``language`` that contains ``containing``."""
    blocks = [body for fence, body in re.findall(r"^```(\w*)\n(.*?)^```", DOC.read_text(), re.S | re.M)
              if fence == language and containing in body]
    assert len(blocks) == 1, f"docs/LMS.md has {len(blocks)} ```{language} blocks with {containing!r}"
    return str(blocks[0])


def with_ports(block: str, ports: list[int]) -> str:
    for documented, port in zip(DOC_PORTS, ports, strict=True):
        assert f"127.0.0.1:{documented}" in block, block
        block = block.replace(f"127.0.0.1:{documented}", f"127.0.0.1:{port}")
    return block


def accepting(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until ``process`` listens on ``port``; its log if it exits first."""
    def listens() -> bool:
        assert process.poll() is None, log.read_text()
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0
    wait_until(listens, timeout=30)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
    process.wait(timeout=30)


@dataclass
class Deployment:
    """Two replicas behind one proxy at ``url``; the stand-in LMS is reached from that URL."""

    url: str
    lms: Lms
    registration_url: str
    ports: list[int]
    replicas: list[subprocess.Popen[bytes]]
    verify: ssl.SSLContext

    def get(self, path: str) -> httpx.Response:
        """A GET through the proxy on a fresh connection, as a learner's browser makes one."""
        return httpx.get(f"{self.url}{path}", verify=self.verify, timeout=90)

    def post(self, path: str) -> httpx.Response:
        """A form POST through the proxy: which requests a proxy sends again depends on the
        method, not on the route (a POST to ``/healthz`` is refused with 405 by a live replica)."""
        return httpx.post(f"{self.url}{path}", verify=self.verify, timeout=90, data={"a": "b"})


@contextmanager
def deployment(tmp_path: Path, postgres: PostgresServer,
               start_proxy: Callable[[Path, int, list[int], tuple[Path, Path]], subprocess.Popen[bytes]],
               ) -> Iterator[Deployment]:
    """Two ``serve`` replicas on one new database and one data folder, speaking plain http on
    loopback as in production, and the proxy ``start_proxy`` starts in front of them with TLS;
    on leaving, the proxy is stopped and the replicas stopped as Ctrl-C stops them."""
    certificate = make_certificate(tmp_path)
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    database, data = postgres.new_database(), tmp_path / "data"
    proxy_port, platform_port, ports = free_port(), free_port(), [free_port(), free_port()]
    url = f"https://127.0.0.1:{proxy_port}"
    state = PlatformState()
    state.base = f"http://127.0.0.1:{platform_port}"
    replicas = []
    for port in ports:
        with (tmp_path / f"replica-{port}.log").open("wb") as log:
            replicas.append(subprocess.Popen(serve_command(data, "--database", database, "--public-url", url,
                                                           "--port", str(port)), stdout=subprocess.DEVNULL, stderr=log))
    proxy = None
    try:
        for port, replica in zip(ports, replicas, strict=True):
            wait_until(partial(_ready, port, replica, tmp_path), timeout=120)
        proxy = start_proxy(tmp_path, proxy_port, ports, certificate)
        with pytest.MonkeyPatch.context() as patch, serving(create_platform(state), platform_port) as platform_url:
            patch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))  # the LMS fetches the tool's JWKS over https
            code = subprocess.run(serve_command(data, "--database", database, "--public-url", url,
                                                "--registration-url"), capture_output=True, text=True, check=True)
            lms = Lms(platform=state, platform_url=platform_url, tool_url=url, certificate=certificate[0], app=None,
                      keep_alive=False)
            yield Deployment(url=url, lms=lms, registration_url=code.stdout.strip(), ports=ports, replicas=replicas,
                             verify=verify)
    finally:
        if proxy is not None:
            stop(proxy)
        for replica in replicas:
            if replica.poll() is None:
                replica.send_signal(signal.SIGCONT)
                replica.send_signal(signal.SIGINT)
        for replica in replicas:
            replica.wait(timeout=60)


def _ready(port: int, replica: subprocess.Popen[bytes], tmp_path: Path) -> bool:
    assert replica.poll() is None, (tmp_path / f"replica-{port}.log").read_text()
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def announcing(site: Deployment, length: int) -> int:
    """The status the proxy answers a POST whose headers announce ``length`` bytes, sent
    before any of them (the proxy must refuse an upload too large before taking it in)."""
    host, port = site.url.removeprefix("https://").split(":")
    with socket.create_connection((host, int(port))) as raw, site.verify.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"POST /healthz HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n"
                    f"Content-Length: {length}\r\n\r\n".encode())
        return int(tls.recv(4096).split(b" ")[1])


def learner_uploads_through_the_proxy(site: Deployment) -> None:
    """The admin registers the tool, the instructor adds week01, a learner launches and uploads:
    every step through the proxy on a fresh connection (so through one replica and the other),
    then the graded attempt's page and feedback through it."""
    browser, attempt = upload_through_the_lms(site.lms, site.registration_url, "s-proxied")
    assert browser.client.cookies.get("__Host-ag-session"), "no session cookie came back through the proxy"
    state = wait_until(lambda: (s := browser.client.get(f"{attempt}/state").json())["state"] in ("graded", "failed")
                       and s)
    assert state["state"] == "graded", state
    feedback = browser.client.get(f"{attempt}/feedback")
    assert feedback.status_code == 200 and "The perceptron" in feedback.text
    browser.close()


# --- nginx ---------------------------------------------------------------------------------------

NGINX_LOG = "$request_method|$uri|$status|$upstream_addr|$upstream_status"


def start_nginx(tmp_path: Path, port: int, backends: list[int], certificate: tuple[Path, Path]
                ) -> subprocess.Popen[bytes]:
    """nginx with docs/LMS.md's ``conf.d/grader.conf`` inside an ``http`` block as Debian's
    nginx.conf includes it, in a prefix of its own; its access log names the replica (or
    replicas, when retried) each request went to."""
    prefix = tmp_path / "nginx"
    (prefix / "logs").mkdir(parents=True)
    site = with_ports(doc_block("nginx", "upstream autograder"), backends)
    for line in ("listen 443 ssl;", "ssl_certificate /etc/ssl/certs/grader.example.edu.pem;",
                 "ssl_certificate_key /etc/ssl/private/grader.example.edu.key;"):
        assert line in site, f"docs/LMS.md's nginx snippet no longer has {line!r}"
    assert f"root {DOC_DEPLOY};" in site, f"docs/LMS.md's nginx snippet no longer serves {DOC_DEPLOY}"
    site = (site.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;").replace(DOC_DEPLOY, str(ROOT / "deploy"))
            .replace("/etc/ssl/certs/grader.example.edu.pem", str(certificate[0]))
            .replace("/etc/ssl/private/grader.example.edu.key", str(certificate[1])))
    (prefix / "grader.conf").write_text(site)
    # as root, workers would run as nobody, who cannot enter the test's private temporary folder
    user = "user root root;\n" if os.geteuid() == 0 else ""
    (prefix / "nginx.conf").write_text(
        f"{user}worker_processes 1;\npid {prefix}/nginx.pid;\nevents {{}}\n"
        f"http {{\n  log_format upstreams '{NGINX_LOG}';\n  access_log {prefix}/logs/access.log upstreams;\n"
        f"  include {prefix}/grader.conf;\n}}\n")
    log = prefix / "logs" / "error.log"
    assert NGINX is not None
    process = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-e", str(log),
                                "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    accepting(port, process, log)
    return process


def nginx_log(tmp_path: Path, lines: int = 0) -> list[list[str]]:
    """The access log's lines (method, path, status, upstream addresses, upstream statuses),
    once it has at least ``lines``: nginx writes a request's line after its answer."""
    log = tmp_path / "nginx" / "logs" / "access.log"
    return wait_until(lambda: read if len(read := [line.split("|") for line in log.read_text().splitlines()]) >= lines
                      else None, timeout=30)


def stuck(send: Callable[[], httpx.Response]) -> tuple[threading.Thread, list[httpx.Response], int]:
    """Requests sent one after another until one does not come back within 5 s (round robin
    gave it to the stopped replica): that request's thread, where its answer will be, and how
    many requests were sent."""
    for sent in range(1, 5):
        answer: list[httpx.Response] = []
        thread = threading.Thread(target=lambda a=answer: a.append(send()), daemon=True)
        thread.start()
        thread.join(5)  # the live replica answers in milliseconds, seconds on a loaded machine
        if thread.is_alive():
            return thread, answer, sent
    raise AssertionError("every request came back: none went to the stopped replica")


@pytest.mark.sandbox
@pytest.mark.skipif(NGINX is None, reason="nginx is not installed: install Debian's nginx-light")
def test_nginx_as_documented_spreads_requests_retries_a_get_but_never_a_post_past_a_dead_replica(
        tmp_path: Path, postgres: PostgresServer) -> None:
    with deployment(tmp_path, postgres, start_nginx) as site:
        for path in ("/healthz", "/readyz", "/healthz", "/readyz"):
            assert site.get(path).status_code == 200
        learner_uploads_through_the_proxy(site)
        served = len(nginx_log(tmp_path, 1))
        assert announcing(site, 7 * 2**20) == 413  # client_max_body_size 6m, refused before reaching a replica
        log = nginx_log(tmp_path, served + 1)
        assert log[-1][:4] == ["POST", "/healthz", "413", "-"], log[-1]  # "-": no replica
        first, second = (f"127.0.0.1:{port}" for port in site.ports)
        reached = [line[3] for line in log]
        assert reached.count(first) >= 4 and reached.count(second) >= 4, reached
        assert all(int(line[2]) < 400 for line in log[:-1]), log

        # the second replica stops answering: a GET and a POST it took hang there until it dies
        os.kill(site.replicas[1].pid, signal.SIGSTOP)
        get, got, gets = stuck(lambda: site.get("/healthz"))
        post, posted, posts = stuck(lambda: site.post("/healthz"))
        kill_alone(site.replicas[1], grace_s=0.5)  # its graders too, once it is gone
        get.join(30)
        post.join(30)
        log = nginx_log(tmp_path, len(log) + gets + posts)
        assert got[0].status_code == 200 and got[0].json() == {"status": "alive"}
        # deploy/proxy-error.html: the learner is told to look at the attempts before sending again
        assert posted[0].status_code == 502 and all(words in posted[0].text for words in PROXY_ERROR), posted[0].text
        retried = [line for line in log if line[3] == f"{second}, {first}"]
        assert [line[:3] for line in retried] == [["GET", "/healthz", "200"]], log
        # the POST's line, once nginx turned it into the GET of its error page: it went to the dead replica alone
        assert [line[:4] for line in log if line[1] == "/proxy-error.html"] == [["GET", "/proxy-error.html", "502",
                                                                                  second]], log
        # two failures within fail_timeout (max_fails=2): the dead replica is left out, nothing waits on it
        for _ in range(6):
            assert site.get("/readyz").status_code == 200
        after = nginx_log(tmp_path, len(log) + 6)[len(log):]
        assert [line[3] for line in after] == [first] * 6, after


# --- HAProxy -------------------------------------------------------------------------------------

# Debian's /etc/haproxy/haproxy.cfg before the doc's sections, but in the foreground, without
# chroot, user and syslog, and with the stats socket in the test's folder
HAPROXY_BASE = """global
    stats socket {socket} mode 600 level admin
    stats timeout 30s
    ssl-default-bind-options ssl-min-ver TLSv1.2 no-tls-tickets

defaults
    mode http
    option dontlognull
    timeout connect 5000
    timeout client 50000
    timeout server 50000

"""


def start_haproxy(tmp_path: Path, port: int, backends: list[int], certificate: tuple[Path, Path]
                  ) -> subprocess.Popen[bytes]:
    """HAProxy with docs/LMS.md's frontend and backend after Debian's global and defaults."""
    folder = tmp_path / "haproxy"
    folder.mkdir()
    pem = folder / "grader.pem"  # HAProxy's crt: the certificate and its key in one file
    pem.write_bytes(certificate[0].read_bytes() + certificate[1].read_bytes())
    sections = with_ports(doc_block("haproxy", "backend autograder"), backends)
    bind = "bind :443 ssl crt /etc/haproxy/grader.example.edu.pem"
    assert bind in sections, f"docs/LMS.md's HAProxy snippet no longer has {bind!r}"
    assert f"file {DOC_DEPLOY}/proxy-error.html" in sections, sections
    sections = sections.replace(bind, f"bind 127.0.0.1:{port} ssl crt {pem}").replace(DOC_DEPLOY, str(ROOT / "deploy"))
    config = folder / "haproxy.cfg"
    config.write_text(HAPROXY_BASE.format(socket=folder / "admin.sock") + sections)
    log = folder / "haproxy.log"
    assert HAPROXY is not None
    check = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    with log.open("wb") as out:
        process = subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=out, stderr=subprocess.STDOUT)
    accepting(port, process, log)
    return process


def haproxy_servers(tmp_path: Path) -> dict[str, dict[str, str]]:
    """HAProxy's own account of the backend's servers (``show stat`` on its stats socket):
    status (UP, DOWN, ...) and ``stot``, the requests each took."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(tmp_path / "haproxy" / "admin.sock"))
        sock.sendall(b"show stat\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    rows = csv.DictReader(reply.decode().lstrip("# ").splitlines())
    return {row["svname"]: row for row in rows if row["pxname"] == "autograder" and row["svname"].startswith("replica")}


def took(tmp_path: Path) -> list[int]:
    servers = haproxy_servers(tmp_path)
    return [int(servers[name]["stot"]) for name in ("replica-1", "replica-2")]


@pytest.mark.sandbox
@pytest.mark.skipif(HAPROXY is None, reason="HAProxy is not installed: install Debian's haproxy")
def test_haproxy_as_documented_takes_a_replica_that_is_not_ready_out_of_rotation_and_back(
        tmp_path: Path, postgres: PostgresServer) -> None:
    with deployment(tmp_path, postgres, start_haproxy) as site:
        wait_until(lambda: all(s["status"] == "UP" for s in haproxy_servers(tmp_path).values()), timeout=30)
        for path in ("/healthz", "/readyz", "/healthz", "/readyz"):
            assert site.get(path).status_code == 200
        # the learner's launch and upload (the graded attempt's pages are the nginx test's)
        upload_through_the_lms(site.lms, site.registration_url, "s-proxied")[0].close()
        assert all(n >= 4 for n in took(tmp_path)), haproxy_servers(tmp_path)
        before = took(tmp_path)
        assert announcing(site, 7 * 2**20) == 413 and took(tmp_path) == before  # refused before any replica

        # the second replica stops answering: its /readyz check fails twice and it leaves the rotation
        os.kill(site.replicas[1].pid, signal.SIGSTOP)
        stopped = time.monotonic()
        wait_until(lambda: haproxy_servers(tmp_path)["replica-2"]["status"] == "DOWN", timeout=30)
        assert time.monotonic() - stopped < 20  # fall 2, inter 2s (each check's timeout too): about 6 s
        before = took(tmp_path)
        for _ in range(6):
            assert site.get("/readyz").status_code == 200
        assert took(tmp_path) == [before[0] + 6, before[1]], haproxy_servers(tmp_path)

        # it answers again: two good checks (rise 2) and it takes requests again
        os.kill(site.replicas[1].pid, signal.SIGCONT)
        wait_until(lambda: haproxy_servers(tmp_path)["replica-2"]["status"] == "UP", timeout=30)
        before = took(tmp_path)
        for _ in range(6):
            assert site.get("/healthz").status_code == 200
        assert took(tmp_path)[1] > before[1], haproxy_servers(tmp_path)

        # killed: a connection refused is tried again on the other replica before any check noticed
        kill_alone(site.replicas[1], grace_s=0.5)
        for _ in range(4):
            assert site.get("/healthz").status_code == 200

        # the last replica stops, then dies with an upload-like POST sent to it: HAProxy's 502 is
        # deploy/proxy-error.html, which tells the learner to look at the attempts before sending again
        os.kill(site.replicas[0].pid, signal.SIGSTOP)
        post, posted, _ = stuck(lambda: site.post("/healthz"))
        kill_alone(site.replicas[0], grace_s=0.5)
        post.join(30)
        assert posted[0].status_code == 502 and all(words in posted[0].text for words in PROXY_ERROR), posted[0].text
        assert posted[0].headers["content-type"] == "text/html; charset=utf-8"


# --- Compose and systemd -------------------------------------------------------------------------

@pytest.mark.slow  # docker-compose, a Python program, takes a second or more to start, twice
@pytest.mark.skipif(shutil.which("docker-compose") is None,
                    reason="docker-compose is not installed: install Debian's docker-compose")
def test_the_documented_compose_files_are_valid_and_start_the_replicas_once_the_database_is_healthy(
        tmp_path: Path) -> None:
    (tmp_path / "compose.yaml").write_text(doc_block("yaml", "x-replica:"))
    (tmp_path / "compose.dask.yaml").write_text(doc_block("yaml", "x-dask:"))
    (tmp_path / "Caddyfile").write_text(doc_block("", "reverse_proxy 127.0.0.1:8001 127.0.0.1:8002"))
    (tmp_path / "Containerfile").write_text(doc_block("dockerfile", "FROM debian"))
    for files in (["compose.yaml"], ["compose.yaml", "compose.dask.yaml"]):
        done = subprocess.run(["docker-compose", *(a for f in files for a in ("-f", f)), "config"], cwd=tmp_path,
                              capture_output=True, text=True, env={**os.environ, "DB_PASSWORD": "s3cret"})
        assert done.returncode == 0, done.stderr
        services = yaml.safe_load(done.stdout)["services"]
        assert services["db"]["healthcheck"]["test"][:2] == ["CMD", "pg_isready"], services["db"]
        for replica in ("replica-1", "replica-2"):
            waits = services[replica].get("depends_on", {}).get("db")
            assert waits == {"condition": "service_healthy"}, f"{replica} does not wait for the database: {waits}"
            assert services[replica]["restart"] == "always"
            assert "grader:s3cret@127.0.0.1:5432/ml101" in services[replica]["environment"]["AUTOGRADER_DATABASE"]
    assert services["replica-1"]["depends_on"]["scheduler"] == {"condition": "service_started"}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (systemd)")
def test_the_documented_systemd_unit_verifies_and_waits_for_postgresql_without_a_start_limit(
        tmp_path: Path) -> None:
    unit = doc_block("ini", "ExecStart=")
    # systemd-analyze checks that ExecStart's program exists: this checkout's, in place of /srv/ml101's
    unit = unit.replace("/srv/ml101/.venv/bin/autograder", str(Path(sys.executable).parent / "autograder"))
    (tmp_path / "autograder.service").write_text(unit.replace("/srv/ml101", str(ROOT)))
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "autograder.service")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "autograder.service" not in done.stderr, done.stderr
    settings = [tuple(line.split("=", 1)) for line in unit.splitlines() if "=" in line and not line.startswith("#")]
    assert ("After", "network-online.target postgresql.service") in settings
    assert ("Wants", "network-online.target postgresql.service") in settings
    assert ("StartLimitIntervalSec", "0") in settings  # a database down at boot: starts again every 5 s, forever
    assert ("Restart", "always") in settings and ("RestartSec", "5") in settings
