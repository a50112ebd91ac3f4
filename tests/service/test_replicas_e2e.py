"""Two ``autograder serve`` replicas on one PostgreSQL database and one data folder, behind
a round-robin load balancer that keeps no sessions (``tests.helpers.RoundRobinProxy``),
driven by the stand-in LMS (issue 27): a student's launch and upload go through whichever
replica each connection reaches, the feedback page is read through each replica, and the
score reaches the LMS exactly once though both replicas' outboxes send."""

from __future__ import annotations

import signal
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import PostgresServer, RoundRobinProxy
from tests.service.lms import Lms
from tests.service.lti_platform import PlatformState, create_platform
from tests.service.test_replicas import serve_command, upload_through_the_lms
from tests.service.web import free_port, make_certificate, serving, wait_for_server, wait_until


def test_two_replicas_behind_a_load_balancer_grade_show_feedback_and_post_the_score_once(
        tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    certificate = make_certificate(tmp_path)
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    state = PlatformState()
    platform_port, ports = free_port(), [free_port(), free_port()]
    state.base = f"http://127.0.0.1:{platform_port}"
    proxy = RoundRobinProxy(ports)
    tool_url = f"https://127.0.0.1:{proxy.port}"
    data = tmp_path / "data"  # one folder for both, as a shared volume would be
    replicas = [subprocess.Popen(serve_command(data, "--database", url, "--public-url", tool_url, "--port", str(port),
                                               "--tls-cert", str(certificate[0]), "--tls-key", str(certificate[1])),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for port in ports]
    try:
        with pytest.MonkeyPatch.context() as patch, serving(create_platform(state), platform_port) as platform_url:
            patch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))  # the LMS fetches the tool's JWKS over https
            for port, replica in zip(ports, replicas, strict=True):
                wait_for_server(f"https://127.0.0.1:{port}/lti/jwks", replica, verify=verify)
            code = subprocess.run(serve_command(data, "--database", url, "--public-url", tool_url,
                                                "--registration-url"), capture_output=True, text=True, check=True)
            lms = Lms(platform=state, platform_url=platform_url, tool_url=tool_url, certificate=certificate[0],
                      app=None)
            browser, attempt = upload_through_the_lms(lms, code.stdout.strip(), "s-both")
            pages, before = [], list(proxy.served)
            for _ in ports:  # a fresh connection each: the proxy hands them to one replica, then the other
                with httpx.Client(verify=verify, cookies=browser.client.cookies, timeout=30) as client:
                    pages.append(wait_until(lambda c=client: (s := c.get(f"{attempt}/state").json())["state"]
                                            in ("graded", "failed") and s))
                    feedback = client.get(f"{attempt}/feedback")
                    assert feedback.status_code == 200 and "The perceptron" in feedback.text
            browser.close()
            assert all(after > then for after, then in zip(proxy.served, before, strict=True)), proxy.served
            assert [p["state"] for p in pages] == ["graded", "graded"] and pages[0]["score"] == pages[1]["score"]
            score = wait_until(lambda: next((s for s in state.scores if s["userId"] == "s-both"), None))
            time.sleep(3)  # both outboxes poll twice a second: a second send would have come by now
            assert [s["userId"] for s in state.scores].count("s-both") == 1
            assert not [b for _, b in state.refused_scores if b.get("userId") == "s-both"]
            assert score["scoreGiven"] == pages[0]["score"]
    finally:
        for replica in replicas:
            replica.send_signal(signal.SIGINT)
        errors = [replica.communicate(timeout=60)[1] for replica in replicas]
        proxy.close()
    assert all(replica.returncode == 0 for replica in replicas), errors
    assert all(n >= 2 for n in proxy.served), proxy.served  # each replica took connections
