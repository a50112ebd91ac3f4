"""A deadline rush on two replicas while their PostgreSQL or one of them goes away (issue 38),
run by hand, not in CI.

Four rushes, one after the other, each on a fresh database of one throwaway PostgreSQL 15
server (``tests.helpers.PostgresServer``) and a fresh data folder, with two ``autograder
serve`` replicas behind the tests' round-robin proxy (``tests.helpers.RoundRobinProxy``),
registered with the tests' stand-in LMS (lti1p3platform) by dynamic registration, week 01
added by deep linking. S students launch, then U byte-unique week-1 uploads (the
``submissions.py`` mix) are spread over T seconds:

- ``undisturbed``: nothing happens; the yardstick of the others.
- ``restart``: ``pg_ctl restart -m fast`` halfway (what a minor-version update does).
- ``stop``: ``pg_ctl stop -m fast`` a third of the way in, started again ``--stop-seconds``
  (30) later (a failover that takes its time).
- ``kill``: the first replica SIGKILLed halfway, at a moment it grades an attempt, and left
  dead (the proxy keeps sending it connections, which fail and are sent again); what it held
  is taken over by the other once its claims expire (30 s, ``claims.CLAIM_TTL_S``).

A learner whose upload is refused (a connection to a dead replica, a 503 while the database
is away, a 429) sends it again, as the pages tell them to; a 409 for the same file means an
earlier send was stored, its answer lost. For each rush it prints the uploads accepted,
graded, graded more than once (a result recorded twice for one attempt, from the replicas'
``graded`` log events, ``--log-format json``, and the same file stored as two attempts),
lost (accepted, never graded or failed), the scores that reached the LMS, those posted more
than once (the same student and timestamp twice), the time from the first upload until
every attempt is graded and every score posted, that time as a multiple of the undisturbed
rush's, and the time from the last upload taken until then (what was left to catch up). Nothing may be lost,
graded twice or posted twice in any.

    .venv/bin/python benchmarks/service_outage.py --students 40 --uploads 80 --seconds 60
    .venv/bin/python benchmarks/service_outage.py --only restart --uploads 30 --seconds 20
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.submissions import build  # noqa: E402
from tests.helpers import PostgresServer, RoundRobinProxy, kill_alone  # noqa: E402
from tests.service.lms import Lms, register_and_add_week  # noqa: E402
from tests.service.lti_platform import PlatformState, create_platform  # noqa: E402
from tests.service.test_database_outage import pg_ctl  # noqa: E402
from tests.service.test_replicas import serve_command  # noqa: E402
from tests.service.web import free_port, make_certificate, serving, wait_for_server  # noqa: E402

SCENARIOS = ("undisturbed", "restart", "stop", "kill")
REPLICAS = 2


def disturbance(scenario: str, postgres: PostgresServer, url: str, replicas: list[subprocess.Popen[str]],
                stop_s: float) -> Callable[[], str]:
    """What happens to the rush mid-way, as a function returning what it did."""
    def restart() -> str:
        started = time.monotonic()
        pg_ctl(postgres, "restart", "-m", "fast")
        return f"pg_ctl restart -m fast took {time.monotonic() - started:.1f} s"

    def stop() -> str:
        started = time.monotonic()
        pg_ctl(postgres, "stop", "-m", "fast")
        time.sleep(stop_s)
        pg_ctl(postgres, "start", "-o", f"-k {postgres.folder} -c listen_addresses= -c fsync=off")
        return f"database down {time.monotonic() - started:.1f} s (pg_ctl stop -m fast, start)"

    def kill() -> str:
        # at a moment it grades an attempt (its claim's token names its pid: ``claims.replica``),
        # so the other replica has that attempt to take over
        holding = text("SELECT count(*) FROM attempts WHERE state = 'grading' AND claimed_by LIKE :mine")
        deadline, held = time.monotonic() + 30, 0
        engine = create_engine(url)
        while not held and time.monotonic() < deadline:
            with engine.connect() as db:
                held = db.execute(holding, {"mine": f"% (pid {replicas[0].pid}) %"}).scalar_one()
            time.sleep(0.02)
        engine.dispose()
        orphans = kill_alone(replicas[0], grace_s=2)
        return (f"replica 1 SIGKILLed {'grading an attempt' if held else '(it held no attempt)'}, not started "
                f"again; its graders alive 2 s later: {orphans}")

    return {"restart": restart, "stop": stop, "kill": kill}[scenario]


def rush(scenario: str, postgres: PostgresServer, notebooks: list[bytes], folder: Path,
         certificate: tuple[Path, Path], args: argparse.Namespace) -> dict[str, Any]:
    """One rush on a fresh database and data folder; its figures."""
    url = postgres.new_database()
    data = folder / scenario / "data"
    logs = [folder / scenario / f"serve-{index}.log" for index in range(REPLICAS)]
    logs[0].parent.mkdir(parents=True)
    state = PlatformState()
    platform_port, ports = free_port(), [free_port() for _ in range(REPLICAS)]
    state.base = f"http://127.0.0.1:{platform_port}"
    proxy = RoundRobinProxy(ports)
    tool_url = f"https://127.0.0.1:{proxy.port}"
    replicas = []
    for port, log in zip(ports, logs, strict=True):
        with log.open("w") as stderr:
            replicas.append(subprocess.Popen(serve_command(
                data, "--database", url, "--public-url", tool_url, "--port", str(port), "--jobs", str(args.jobs),
                "--tls-cert", str(certificate[0]), "--tls-key", str(certificate[1]), "--log-format", "json"),
                stdout=subprocess.DEVNULL, stderr=stderr, text=True))
    engine = create_engine(url, pool_pre_ping=True)
    accepted: list[float] = []  # when each upload was taken
    retries = Counter[str]()
    lock = threading.Lock()
    did: list[str] = []
    load_at_start = os.getloadavg()[0]
    with serving(create_platform(state), platform_port) as platform_url:
        for port, process in zip(ports, replicas, strict=True):
            wait_for_server(f"https://127.0.0.1:{port}/readyz", process, timeout=180,
                            verify=ssl.create_default_context(cafile=str(certificate[0])))
        code = subprocess.run(serve_command(data, "--database", url, "--public-url", tool_url, "--registration-url"),
                              capture_output=True, text=True, check=True)
        lms = Lms(platform=state, platform_url=platform_url, tool_url=tool_url, certificate=certificate[0], app=None)
        register_and_add_week(lms, registration_url=code.stdout.strip())
        with ThreadPoolExecutor(8) as pool:
            students = list(pool.map(lambda i: lms.launch(f"s{i:03d}"), range(args.students)))
        assert all('id="upload"' in page.text for _, page in students), "a launch did not reach the week's page"

        start = time.time()

        def upload(index: int) -> None:
            browser, page = students[index % len(students)]
            time.sleep(max(0.0, start + index * args.seconds / args.uploads - time.time()))
            while True:
                try:
                    reply = browser.submit(page, "upload", files={"notebook": (
                        f"week01-{index}.ipynb", notebooks[index], "application/x-ipynb+json")})
                except httpx.TransportError:
                    with lock:
                        retries["no answer (a dead replica)"] += 1
                    time.sleep(0.5)
                    continue
                taken = reply.status_code == 200 and "/attempt/" in str(reply.url)
                if taken or reply.status_code == 409:  # 409: this file was stored by a send whose answer was lost
                    with lock:
                        accepted.append(time.time())
                        if not taken:
                            retries["409: stored by an earlier send"] += 1
                    return
                with lock:
                    retries[f"HTTP {reply.status_code}"] += 1
                time.sleep(min(5.0, float(reply.headers.get("Retry-After", "0.5") or 0.5)))

        disturber = None
        if scenario != "undisturbed":
            disturb = disturbance(scenario, postgres, url, replicas, args.stop_seconds)

            def midway() -> None:
                time.sleep(args.seconds / (3 if scenario == "stop" else 2))
                try:
                    did.append(disturb())
                except Exception as exc:  # noqa: BLE001 - said in the figures, the rush goes on
                    did.append(f"the disturbance failed: {exc!r}")

            disturber = threading.Thread(target=midway, daemon=True)
            disturber.start()
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(upload, range(args.uploads)))
        if disturber:
            disturber.join()
        uploaded_by = time.time()

        def count(query: str) -> int:
            with engine.connect() as db:
                return int(db.execute(text(query)).scalar_one())

        while count("SELECT count(*) FROM attempts WHERE state IN ('queued', 'grading')") \
                or count("SELECT count(*) FROM posts WHERE state = 'pending'"):
            if time.time() - uploaded_by > args.patience:
                print(f"{scenario}: gave up waiting for grading and scores after {args.patience:.0f} s", flush=True)
                break
            time.sleep(0.5)
        time.sleep(2)  # the outboxes poll twice a second: a second send of a score would have come by now
        for process in replicas:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in replicas:
            process.wait(timeout=120)
        for browser, _ in students:
            browser.close()
    proxy.close()
    with engine.connect() as db:
        rows = db.execute(text('SELECT id, content_hash, state, tries, graded_at FROM attempts')).all()
        posts = Counter(db.execute(text("SELECT state FROM posts")).scalars())
    engine.dispose()
    events = [line for log in logs for line in _json_lines(log)]
    graded = Counter(e["attempt"] for e in events if e.get("event") == "graded")
    sent = Counter((s["userId"], s["timestamp"]) for s in state.scores)
    # when the last score arrived or the last attempt was graded (one that does not beat its
    # student's best posts no score), whichever came later
    all_done = max([s["received"] for s in state.scores]
                     + [datetime.fromisoformat(r.graded_at).timestamp() for r in rows if r.graded_at], default=start)
    return {
        "scenario": scenario, "did": did[0] if did else "nothing",
        "accepted": len(accepted), "attempts_stored": len(rows),
        "graded": sum(r.state == "graded" for r in rows), "failed": sum(r.state == "failed" for r in rows),
        "graded_more_than_once": sum(n - 1 for n in graded.values() if n > 1),
        "same_file_stored_twice": sum(n - 1 for n in Counter(r.content_hash for r in rows).values() if n > 1),
        "lost": len(accepted) - sum(r.state in ("graded", "failed") for r in rows),
        "graded_again_after_a_takeover": sum(r.tries > 1 for r in rows),
        "scores_at_the_lms": len(state.scores), "posted_more_than_once": sum(n - 1 for n in sent.values() if n > 1),
        "posts": dict(posts), "scores_refused_by_the_lms": Counter(status for status, _ in state.refused_scores),
        "first_upload_to_all_done_s": round(all_done - start, 1),
        "last_upload_taken_s": round(max(accepted, default=start) - start, 1),
        "last_upload_taken_to_all_done_s": round(all_done - max(accepted, default=start), 1),
        "client_retries": dict(retries),
        "log_events": dict(Counter(str(e.get("event")) for e in events)),
        "log_lines": sum(1 for log in logs for _ in log.open()),
        "tracebacks_in_logs": sum(log.read_text().count("Traceback") for log in logs),
        "load_average_1min": [round(load_at_start, 2), round(os.getloadavg()[0], 2)],
    }


def _json_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for line in log.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue  # a line not from the log (a crash's output)
    return lines


def table(results: list[dict[str, Any]]) -> str:
    """The figures as a Markdown table, each time beside the undisturbed rush's."""
    base = next((r["first_upload_to_all_done_s"] for r in results if r["scenario"] == "undisturbed"), None)
    lines = ["| rush | accepted / graded / failed | graded more than once | lost | scores at the LMS "
             "(= posts posted) | posted more than once | first upload → last graded and posted | × undisturbed "
             "| last upload taken → last graded and posted |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        seconds = r["first_upload_to_all_done_s"]
        ratio = f"{seconds / base:.2f}" if base else "-"
        lines.append(f"| {r['scenario']} | {r['accepted']} / {r['graded']} / {r['failed']} | "
                     f"{r['graded_more_than_once'] + r['same_file_stored_twice']} | {r['lost']} | "
                     f"{r['scores_at_the_lms']} (= {r['posts'].get('posted', 0)}) | {r['posted_more_than_once']} | "
                     f"{seconds} s | {ratio} | {r['last_upload_taken_to_all_done_s']} s |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--uploads", type=int, default=80)
    parser.add_argument("--seconds", type=float, default=60, help="the uploads are spread over this long")
    parser.add_argument("--jobs", type=int, default=1, help="graders of each replica")
    parser.add_argument("--clients", type=int, default=16, help="uploads in flight at once at most")
    parser.add_argument("--stop-seconds", type=float, default=30.0, help="how long the database is down in 'stop'")
    parser.add_argument("--patience", type=float, default=600.0, help="seconds to wait for grading after the uploads")
    parser.add_argument("--only", choices=SCENARIOS, action="append", help="run only these rushes (repeatable)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here too")
    args = parser.parse_args()
    if shutil.which("pg_config") is None:
        parser.error("PostgreSQL is not installed (no pg_config): install Debian's postgresql package")

    folder = Path(tempfile.mkdtemp(prefix="service-outage-"))
    certificate = make_certificate(folder)
    os.environ["REQUESTS_CA_BUNDLE"] = str(certificate[0])  # the LMS fetches the tool's JWKS over https
    notebooks = [p.read_bytes() for p in build(folder / "notebooks", args.uploads, "week01")]
    postgres = PostgresServer(Path(tempfile.mkdtemp(prefix="service-outage-pg-")))
    # pg_ctl, not PostgresServer.stop: after a restart the server is pg_ctl's, not our child
    atexit.register(lambda: pg_ctl(postgres, "stop", "-m", "immediate", check=False))
    version = subprocess.run(["pg_config", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    print(f"{version}; {REPLICAS} replicas, --jobs {args.jobs} each; {args.students} students, {args.uploads} "
          f"uploads over {args.seconds:.0f} s; {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}", flush=True)
    results = []
    for scenario in args.only or SCENARIOS:
        results.append(rush(scenario, postgres, notebooks, folder, certificate, args))
        print(json.dumps(results[-1]), flush=True)
    print(table(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
