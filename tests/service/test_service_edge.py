"""The grading service under attack (issue 22, items 1 to 6): every attack here worked on the
service before its edge was drawn, and each test says what it now gets instead.

The tool runs as ``autograder serve`` runs it (uvicorn with the edge's protocol, over https
on loopback) against the stand-in LMS built on lti1p3platform; the last test runs the real
``autograder serve --tls-cert`` process.
"""

from __future__ import annotations

import json
import select
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI

from autograder.course import Course
from autograder.gradebook import FILENAME
from autograder.service.edge import EdgeLimits
from autograder.service.sessions import SESSION_COOKIE, STATE_COOKIE
from tests.service.lms import Lms, registered_lms, unique
from tests.service.lti_platform import PlatformState, create_platform
from tests.service.web import Browser, forms, free_port, make_certificate, serving, wait_for_server, wait_until

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "week01"
CORRECT = json.loads((FIXTURES / "correct_fresh_notebook.ipynb").read_text())


def notebook(extra: str = "", sleep_s: float = 0.0) -> bytes:
    """week01's correct notebook with a cell of its own (so no two uploads are the same file),
    sleeping ``sleep_s`` in that cell: a slow upload, well within the per-cell limit."""
    nb = json.loads(json.dumps(CORRECT))
    nb["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                        "source": f"import time\ntime.sleep({sleep_s})\n# {extra}\n"})
    return json.dumps(nb).encode()


def upload_to(browser: Browser, lms: Lms, path: str, content: bytes, csrf: str) -> httpx.Response:
    return browser.client.post(f"{lms.tool_url}{path}", data={"csrf": csrf}, follow_redirects=False,
                               files={"notebook": ("week01.ipynb", content, "application/x-ipynb+json")})


def csrf_of(page: httpx.Response) -> str:
    return str(next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"])


def attempt_state(browser: Browser, lms: Lms, location: str) -> dict[str, Any]:
    return dict(browser.client.get(f"{lms.tool_url}{location}/state").json())


def graded_order(lms: Lms) -> list[tuple[str, int]]:
    """(user, attempt number) of every graded attempt, in the order grading finished."""
    with sqlite3.connect(lms.app.state.store.root / FILENAME) as db:
        rows = db.execute("SELECT user, number FROM attempts WHERE state = 'graded' ORDER BY graded_at").fetchall()
    return [(str(user), int(number)) for user, number in rows]


def tls_socket(lms_or_url: Lms | str, certificate: Path) -> ssl.SSLSocket:
    url = lms_or_url.tool_url if isinstance(lms_or_url, Lms) else lms_or_url
    parts = urlsplit(url)
    context = ssl.create_default_context(cafile=str(certificate))
    raw = socket.create_connection((parts.hostname, parts.port), timeout=10)
    return context.wrap_socket(raw, server_hostname=parts.hostname)


def closed_within(sock: ssl.SSLSocket, seconds: float) -> bool:
    """Whether the server closes ``sock`` (EOF or reset) within ``seconds``, sending nothing."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1024) == b""
    except (ConnectionError, ssl.SSLError):
        return True
    except TimeoutError:
        return False


def send_until_answered(sock: ssl.SSLSocket, head: bytes, chunks: Iterable[bytes]) -> str:
    """Send ``head`` then ``chunks`` one by one, stopping as soon as the server answers (it
    may answer long before the body ends); the status line of its answer ('' if none within
    5 s of the last chunk)."""
    sock.sendall(head)
    try:
        for chunk in chunks:
            answer = early_answer(sock)
            if answer:
                return answer.decode("latin-1").split("\r\n")[0]
            sock.sendall(chunk)
    except (ConnectionError, ssl.SSLError):
        pass  # the server closed: its answer is already here
    return reply_head(sock, 5.0)


def early_answer(sock: ssl.SSLSocket) -> bytes:
    """What the server has sent so far, without waiting (TLS records that carry no data, such
    as TLS 1.3 session tickets, make the socket readable too)."""
    if not select.select([sock], [], [], 0)[0]:
        return b""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return sock.recv(4096)
    except ssl.SSLWantReadError:
        return b""
    finally:
        sock.settimeout(timeout)


def reply_head(sock: ssl.SSLSocket, seconds: float) -> str:
    """The status line the server answers with within ``seconds`` ('' if none)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(4096).decode("latin-1").split("\r\n")[0]
    except (TimeoutError, ConnectionError, ssl.SSLError):
        return ""


@pytest.fixture(scope="module")
def graded_lms(tmp_path_factory: pytest.TempPathFactory, course: Course) -> Iterator[Lms]:
    """The whole service, grading with one warm grader (``--jobs 1``)."""
    with registered_lms(tmp_path_factory.mktemp("edge-graded"), course) as running:
        yield running


LIMITS = EdgeLimits(max_connections=12, header_timeout_s=2.0, body_idle_timeout_s=2.0, body_timeout_s=8.0)

# the ``lms`` fixture here: the web app alone (nothing graded), with small edge limits and rate limits to hit
pytestmark = pytest.mark.lms(grading=False, edge=LIMITS, requests_per_minute=8)


# ---- item 1: week names are normalised once, at the edge -------------------------------------

@pytest.mark.sandbox
def test_an_upload_to_a_week_alias_is_graded_under_the_canonical_name_and_stalls_no_one(graded_lms: Lms) -> None:
    lms = graded_lms
    alias_user, other_user = unique("s-alias"), unique("s-after")
    browser, page = lms.launch(alias_user)
    queued = upload_to(browser, lms, "/week/1/upload", notebook("alias"), csrf_of(page))
    assert queued.status_code == 303, queued.text
    other, other_page = lms.launch(other_user)
    after = upload_to(other, lms, "/week/week01/upload", notebook("after"), csrf_of(other_page))
    assert after.status_code == 303, after.text
    (attempt,) = lms.app.state.store.attempts(context=_context(lms), user=alias_user, week="week01")  # not "1"
    for who, reply in ((browser, queued), (other, after)):  # both graded: no grader waits on a name it never claims
        location = reply.headers["location"]
        state = wait_until(lambda b=who, loc=location: (s := attempt_state(b, lms, loc))["state"] in
                           ("graded", "failed") and s, timeout=240)
        assert state["state"] == "graded"
    assert attempt.week == "week01"


def _context(lms: Lms) -> str:
    registration = lms.platform.registration()
    return f"{lms.platform.base}|{registration.get_deployment_id()}|42"


@pytest.fixture(scope="module")
def strict_lms(tmp_path_factory: pytest.TempPathFactory, course: Course) -> Iterator[Lms]:
    """The course with ``service.toml`` saying one attempt a week (a copy of the course whose
    ``source/`` is this checkout's)."""
    folder = tmp_path_factory.mktemp("edge-strict")
    root = folder / "course"
    root.mkdir()
    for name in ("source", "course.toml"):
        (root / name).symlink_to(ROOT / name)
    (root / "service.toml").write_text("[week01]\nmax_attempts = 1\nmin_interval_s = 3600\n")
    with registered_lms(folder, Course.locate(root), grading=False) as running:
        yield running


def test_an_alias_does_not_get_another_attempt_past_the_courses_limits(strict_lms: Lms) -> None:
    browser, page = strict_lms.launch(unique("s-limits"))
    first = upload_to(browser, strict_lms, "/week/week01/upload", notebook("first"), csrf_of(page))
    assert first.status_code == 303, first.text
    for alias in ("1", "01", "week1", "WEEK01"):
        again = upload_to(browser, strict_lms, f"/week/{alias}/upload", notebook(alias), csrf_of(page))
        assert again.status_code == 409 and "all 1 attempts" in again.text, (alias, again.status_code)


def test_non_ascii_values_get_a_4xx_never_a_500(lms: Lms) -> None:
    kelvin = "wee\u212a01"  # KELVIN SIGN: "weeK01".lower() == "week01"
    browser, page = lms.launch(unique("s-ascii"))
    teacher, _ = lms.launch(unique("t-ascii"), role="instructor")
    replies = {
        "week page": browser.client.get(f"{lms.tool_url}/week/{kelvin}"),
        "results": teacher.client.get(f"{lms.tool_url}/instructor/{kelvin}/results.zip"),
        "csrf": browser.client.post(f"{lms.tool_url}/week/week01/upload", data={"csrf": "é" * 8},
                                    files={"notebook": ("week01.ipynb", notebook("csrf"))}),
        "registration secret (query)": browser.client.get(f"{lms.tool_url}/lti/register", params={
            "secret": "é", "openid_configuration": f"{lms.platform_url}/.well-known/openid-configuration"}),
        "registration code (path)": browser.client.get(f"{lms.tool_url}/lti/register/é", params={
            "openid_configuration": f"{lms.platform_url}/.well-known/openid-configuration"}),
        "huge attempt id": browser.client.get(f"{lms.tool_url}/attempt/{10**30}"),
    }
    state_browser = lms.browser()
    state, _ = lms.begin_login(state_browser)
    state_browser.client.cookies.clear()
    replies["state cookie"] = state_browser.client.post(  # "\303\251": a quoted cookie value that reads as "é"
        f"{lms.tool_url}/lti/launch", data={"id_token": "x.y.z", "state": state},
        headers={"Cookie": f'{STATE_COOKIE}="\\303\\251"'})
    replies["state"] = lms.browser().client.post(f"{lms.tool_url}/lti/launch", data={"id_token": "x", "state": "é"})
    statuses = {what: reply.status_code for what, reply in replies.items()}
    assert all(400 <= status < 500 for status in statuses.values()), statuses


# ---- item 2: registration -----------------------------------------------------------------

def hostile_platform(issuer: str, client_id: str, base: str) -> FastAPI:
    """An "LMS" whose configuration names ``issuer`` and answers every registration with
    ``client_id``: its keys, token and login endpoints are its own, at ``base``."""
    app = FastAPI()

    @app.get("/.well-known/openid-configuration")
    def configuration() -> dict[str, Any]:
        return {"issuer": issuer, "authorization_endpoint": f"{base}/auth", "token_endpoint": f"{base}/token",
                "jwks_uri": f"{base}/jwks", "registration_endpoint": f"{base}/register"}

    @app.post("/register")
    def register() -> dict[str, Any]:
        return {"client_id": client_id,
                "https://purl.imsglobal.org/spec/lti-tool-configuration": {"deployment_id": "1"}}

    return app


def test_a_configuration_url_naming_the_issuer_as_user_info_is_refused(lms: Lms) -> None:
    port = free_port()
    attacker = f"http://127.0.0.1:{port}"
    victim = lms.platform.registration()
    with serving(hostile_platform(lms.platform.base, victim.get_client_id(), attacker), port):
        trick = f"http://{lms.platform.base.removeprefix('http://')}@127.0.0.1:{port}/.well-known/openid-configuration"
        reply = lms.browser().get(lms.app.state.tool.new_registration_url(), params={"openid_configuration": trick})
    assert reply.status_code == 401 and "refusing to register" in reply.text
    platforms = lms.app.state.tool.platforms.all()
    assert all(p.jwks_url == f"{lms.platform_url}/jwks" for p in platforms)  # the attacker's keys trusted nowhere


def test_a_new_registration_cannot_overwrite_an_issuers_existing_one(lms: Lms) -> None:
    port = free_port()
    platform = f"http://127.0.0.1:{port}"
    config = {"openid_configuration": f"{platform}/.well-known/openid-configuration"}
    with serving(hostile_platform(platform, "client-1", platform), port):
        first = lms.browser().get(lms.app.state.tool.new_registration_url(), params=config)
        assert first.status_code == 200, first.text
        before = [p for p in lms.app.state.tool.platforms.all() if p.issuer == platform]
        again = lms.browser().get(lms.app.state.tool.new_registration_url(), params=config)
    assert again.status_code == 401 and "already has a registration" in again.text
    assert [p for p in lms.app.state.tool.platforms.all() if p.issuer == platform] == before


def test_a_registration_url_carries_its_code_in_the_path_and_works_once(lms: Lms) -> None:
    url = lms.app.state.tool.new_registration_url()
    assert urlsplit(url).query == "" and urlsplit(url).path.startswith("/lti/register/")
    params = {"openid_configuration": f"{lms.platform_url}/.well-known/openid-configuration",
              "registration_token": lms.platform.new_registration_token()}
    assert lms.browser().get(url, params=params).status_code == 200
    params["registration_token"] = lms.platform.new_registration_token()
    assert lms.browser().get(url, params=params).status_code == 403


def test_the_config_page_shows_no_issuer_or_client_id_to_anyone(lms: Lms) -> None:
    page = lms.browser().get(f"{lms.tool_url}/lti/config")
    assert page.status_code == 200 and f"{lms.tool_url}/lti/launch" in page.text
    registration = lms.platform.registration()
    assert lms.platform.base not in page.text and registration.get_client_id() not in page.text


# ---- item 3: a fair queue -------------------------------------------------------------------

@pytest.mark.sandbox
def test_one_learners_many_slow_uploads_delay_another_by_at_most_one_grading_slot(graded_lms: Lms) -> None:
    lms = graded_lms
    hog, next_one = unique("s-hog"), unique("s-next")
    browser, page = lms.launch(hog)
    locations = []
    for i in range(4):
        reply = upload_to(browser, lms, "/week/week01/upload", notebook(f"slow {i}", sleep_s=1.5), csrf_of(page))
        assert reply.status_code == 303, reply.text
        locations.append(reply.headers["location"])
    wait_until(lambda: attempt_state(browser, lms, locations[0])["state"] == "grading", timeout=120)
    other, other_page = lms.launch(next_one)
    reply = upload_to(other, lms, "/week/week01/upload", notebook("quick"), csrf_of(other_page))
    assert reply.status_code == 303, reply.text
    assert attempt_state(other, lms, reply.headers["location"])["position"] == 1  # next, not fifth
    wait_until(lambda: all(attempt_state(browser, lms, loc)["state"] == "graded" for loc in locations), timeout=400)
    order = [user for user, _ in graded_order(lms) if user in (hog, next_one)]
    assert order.index(next_one) <= 1, order  # graded right after the hog's attempt under way


# ---- item 4: bodies, slow clients, connections ------------------------------------------------

def session_cookie(browser: Browser) -> str:
    return str(browser.client.cookies.get(SESSION_COOKIE))


def test_a_chunked_upload_is_refused_while_it_streams_in(lms: Lms) -> None:
    browser, page = lms.launch(unique("s-chunked"))
    sock = tls_socket(lms, lms.certificate)
    boundary = "edge"
    part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf_of(page)}\r\n--{boundary}\r\n"
            "Content-Disposition: form-data; name=\"notebook\"; filename=\"week01.ipynb\"\r\n\r\n").encode()
    head = (f"POST /week/week01/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
            f"Cookie: {SESSION_COOKIE}={session_cookie(browser)}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n").encode()
    chunk = 64 * 1024
    head += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    # twice the upload limit, no Content-Length, and the body is never finished
    status = send_until_answered(sock, head, (f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"
                                              for _ in range(2 * 512 * 1024 // chunk)))
    assert " 413 " in status  # answered while it streamed in: the server stopped reading
    sock.close()


def test_a_large_launch_form_is_refused_before_it_is_read(lms: Lms) -> None:
    declared = tls_socket(lms, lms.certificate)
    status = send_until_answered(declared, b"POST /lti/launch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                                 b"150000000\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nid_token=",
                                 (b"a" * 65536 for _ in range(32)))
    assert " 413 " in status
    declared.close()
    chunked = tls_socket(lms, lms.certificate)
    status = send_until_answered(chunked, b"POST /lti/launch HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
                                 b"chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n",
                                 (b"10000\r\n" + b"a" * 65536 + b"\r\n" for _ in range(32)))  # 2 MiB, unfinished
    assert " 413 " in status
    chunked.close()


@pytest.mark.slow
def test_a_body_that_stalls_is_dropped(lms: Lms) -> None:
    sock = tls_socket(lms, lms.certificate)
    sock.sendall(b"POST /lti/launch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n"
                 b"Content-Type: application/x-www-form-urlencoded\r\n\r\nid_token=abc")
    assert " 408 " in reply_head(sock, LIMITS.body_idle_timeout_s + 5)
    sock.close()


@pytest.mark.slow
def test_a_connection_that_never_finishes_its_head_is_closed(lms: Lms) -> None:
    sock = tls_socket(lms, lms.certificate)
    sock.sendall(b"GET /lti/config HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing
    assert closed_within(sock, LIMITS.header_timeout_s + 5)
    sock.close()


def test_connections_past_the_cap_are_closed_at_once_and_service_goes_on(lms: Lms) -> None:
    held = [tls_socket(lms, lms.certificate) for _ in range(LIMITS.max_connections)]
    try:
        extra = tls_socket(lms, lms.certificate)
        assert closed_within(extra, 1.0)
        extra.close()
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.5)
    assert lms.browser().get(f"{lms.tool_url}/lti/jwks").status_code == 200


# ---- item 5: a session is tied to the weeks it was launched into --------------------------------

def test_a_learner_launched_into_week01_cannot_upload_to_week04(lms: Lms) -> None:
    user = unique("s-week")
    browser, page = lms.launch(user)
    reply = upload_to(browser, lms, "/week/week04/upload", notebook("week04"), csrf_of(page))
    assert reply.status_code == 403 and "week04" in reply.text
    assert browser.client.get(f"{lms.tool_url}/week/week04").status_code == 403
    store = lms.app.state.store
    assert store.attempts(context=_context(lms), user=user, week="week04") == []
    # launched into week02 as well (another tab), both weeks' pages work
    browser.get(f"{lms.platform_url}/start", params={"user": user, "link": "not-deep-linked", "week": "week02"})
    assert browser.client.get(f"{lms.tool_url}/week/week02").status_code == 200
    assert browser.client.get(f"{lms.tool_url}/week/week01").status_code == 200


# ---- item 6: rate limits per platform, cookie prefixes ----------------------------------------

def test_one_platforms_learner_does_not_throttle_anothers_with_the_same_id(lms: Lms, tmp_path: Path) -> None:
    second = PlatformState()
    port = free_port()
    second.base = f"http://127.0.0.1:{port}"
    with serving(create_platform(second), port) as second_url:
        registered = lms.browser().get(lms.app.state.tool.new_registration_url(), params={
            "openid_configuration": f"{second_url}/.well-known/openid-configuration",
            "registration_token": second.new_registration_token()})
        assert registered.status_code == 200, registered.text
        user = unique("7")
        first, _ = lms.launch(user)
        other = lms.browser()
        assert other.get(f"{second_url}/start", params={"user": user, "link": "x", "week": "week01"}).status_code == 200
        statuses = [first.client.get(f"{lms.tool_url}/week/week01").status_code for _ in range(12)]
        assert statuses[-1] == 429  # this platform's user 7 hit the limit
        assert other.client.get(f"{lms.tool_url}/week/week01").status_code == 200  # the other's user 7 did not


def test_cookies_are_host_prefixed_secure_and_for_the_whole_site(lms: Lms) -> None:
    browser = lms.browser()
    seen: list[httpx.Response] = []
    browser.client.event_hooks["response"].append(seen.append)
    browser.get(f"{lms.platform_url}/start", params={"user": unique("s-cookie"), "link": lms.activity_link})
    cookies = [h for r in seen for h in r.headers.get_list("set-cookie")]
    ours = [c for c in cookies if "ag-" in c.split("=")[0]]
    assert {c.split("=")[0] for c in ours} == {SESSION_COOKIE, STATE_COOKIE}
    for cookie in ours:
        attributes = [a.strip().lower() for a in cookie.split(";")[1:]]
        assert cookie.startswith("__Host-") and "secure" in attributes and "path=/" in attributes
        assert not any(a.startswith("domain") for a in attributes)


# ---- the real `autograder serve --tls-cert`: the same edge ---------------------------------------

@contextmanager
def serve_with_tls(folder: Path, *options: str) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """The real ``autograder serve --tls-cert`` on a free port, once it answers: (the process,
    its URL, its certificate); stopped by SIGINT at the end unless the test stopped it."""
    certificate = make_certificate(folder)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "autograder", "serve", "--course", str(ROOT), "--public-url", f"https://127.0.0.1:{port}",
         "--data", str(folder / "data"), "--port", str(port), "--tls-cert", str(certificate[0]),
         "--tls-key", str(certificate[1]), *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"https://127.0.0.1:{port}"
    try:
        wait_for_server(f"{url}/lti/jwks", server, verify=ssl.create_default_context(cafile=str(certificate[0])))
        yield server, url, certificate[0]
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            server.communicate(timeout=30)


@pytest.mark.sandbox
def test_serve_with_its_own_tls_caps_connections_and_closes_half_sent_heads(tmp_path: Path) -> None:
    with serve_with_tls(tmp_path, "--max-connections", "4") as (_, url, certificate):
        verify = ssl.create_default_context(cafile=str(certificate))
        held = [tls_socket(url, certificate) for _ in range(4)]
        extra = tls_socket(url, certificate)
        assert closed_within(extra, 1.0)  # the fifth
        held[0].sendall(b"GET /lti/jwks HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head never finished
        assert closed_within(held[0], EdgeLimits().header_timeout_s + 5)
        # the four are dropped, not left closing while their client never answers: room again
        assert httpx.get(f"{url}/lti/jwks", verify=verify, timeout=10).status_code == 200
        for sock in held:
            sock.close()


@pytest.mark.sandbox
def test_serve_with_its_own_tls_stops_at_once_with_an_idle_keep_alive_client(tmp_path: Path) -> None:
    """SIGTERM with a browser's idle keep-alive connection open: uvicorn's graceful TLS close
    waited up to 30 s for a close_notify the idle client never sends; the edge drops it."""
    with serve_with_tls(tmp_path) as (server, url, certificate):
        idle = tls_socket(url, certificate)
        idle.sendall(b"GET /lti/jwks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += idle.recv(4096)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"connection: close" not in head.lower()
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")))
        while len(body) < length:
            body += idle.recv(4096)
        started = time.monotonic()  # well within the keep-alive timeout: the connection is idle, open
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
        stopped_s = time.monotonic() - started
        assert stopped_s < EdgeLimits().keep_alive_s, f"serve took {stopped_s:.1f} s to stop"
        assert server.returncode == 0, server.returncode  # closed its graders and outbox, not killed
        idle.close()
