"""Deadline rush on the grading service (issue 13), run by hand, not in CI.

``autograder serve`` runs as its own process (https on loopback, --tls-cert) against the
stand-in LMS of the tests (lti1p3platform, over http on loopback), registered by LTI
Dynamic Registration with the week (``--week``, week01 by default) added by deep
linking.  S simulated students launch from the LMS, then U uploads (byte-unique notebooks
of that week from its test fixtures, right and wrong mixed: ``submissions.py``) are
spread evenly over T seconds.  With ``--kill`` the server is killed with SIGKILL halfway
through and started again; uploads that meet the dead server are retried, as a student
would.  With ``--database postgresql`` the service keeps its attempts, queue and outbox in
a throwaway PostgreSQL server (``tests.helpers.PostgresServer``) instead of its SQLite
files, and ``--replicas N`` runs N ``serve`` processes on it and one data folder behind the
tests' round-robin proxy (``tests.helpers.RoundRobinProxy``; ``--kill`` kills the first).
With ``--hogs`` the rush is run twice on the same servers, first on the idle machine, then
beside CPU hogs (two spinning processes per core, ``tests.helpers.cpu_hogs``) with the same
notebooks made byte-unique again, and ``idle_vs_loaded`` compares each upload's two scores
(issue 37: budgets in CPU time give the same score whatever the load).
Reported: p50/p95 seconds from upload to feedback ready and to the score arriving at the
LMS, the servers' peak memory (RSS, their process trees, summed), and uploads lost (accepted
but never graded) or duplicated (graded twice, or a score posted twice): both must be 0.

    .venv/bin/python benchmarks/service_rush.py --students 300 --uploads 1000 --seconds 180 --jobs 2 --kill
    .venv/bin/python benchmarks/service_rush.py --week week06 --students 300 --uploads 1000 --seconds 180
    .venv/bin/python benchmarks/service_rush.py --database postgresql --replicas 2 --uploads 100 --seconds 60
    .venv/bin/python benchmarks/service_rush.py --week week02 --students 60 --uploads 120 --seconds 60 --hogs
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.submissions import build, kind_of
from tests.helpers import PostgresServer, RoundRobinProxy, cpu_hogs, kill_alone
from tests.service.lti_platform import PlatformState, create_platform
from tests.service.web import Browser, forms, free_port, make_certificate, serving


class Server:
    """``autograder serve`` in a subprocess, startable again after a kill."""

    def __init__(self, folder: Path, port: int, certificate: tuple[Path, Path], jobs: int, *, public_url: str,
                 database: str | None, log: Path) -> None:
        self.command = [sys.executable, "-m", "autograder", "serve", "--course", str(ROOT), "--public-url",
                        public_url, "--data", str(folder / "service"), "--port", str(port),
                        "--jobs", str(jobs), "--tls-cert", str(certificate[0]), "--tls-key", str(certificate[1]),
                        *(["--database", database] if database else [])]
        self.port, self.certificate, self.log = port, certificate, log
        self.process: subprocess.Popen[bytes] | None = None
        self.peak_rss = 0

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log)
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"https://127.0.0.1:{self.port}/lti/jwks", verify=False, timeout=2)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"autograder serve did not start: see {self.log}") from None
                time.sleep(0.2)

    def kill(self) -> int:
        """SIGKILL the server alone; how many of its processes (graders) outlived it by 5 s."""
        assert self.process is not None
        return kill_alone(self.process)

    def stop(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)

    def sample_memory(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            tree = psutil.Process(self.process.pid)
            rss = tree.memory_info().rss + sum(c.memory_info().rss for c in tree.children(recursive=True))
        except psutil.Error:
            return
        self.peak_rss = max(self.peak_rss, rss)


def registration_url(server: Server) -> str:
    """A one-time registration URL, as an admin asks ``autograder serve`` for one (it prints
    none at start: one in the log would be good to anyone reading it)."""
    asked = subprocess.run([*server.command, "--registration-url"], capture_output=True, text=True, check=True)
    return asked.stdout.strip()


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None}
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 3), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}


def made_unlike(notebook: bytes, label: str) -> bytes:
    """The notebook with ``label`` in its metadata: the same code in a file no earlier upload
    had, so the service grades it again instead of finding it graded."""
    document = json.loads(notebook)
    document["metadata"]["rush"] = label
    return json.dumps(document).encode()


BUDGET_WORDS = (" s of CPU time", " s of wall-clock time")  # how the English feedback names a budget that ran out


def stopped_by_a_budget(document: str | dict[str, Any] | None) -> bool:
    """Whether a graded attempt's feedback (its result document in the gradebook) says a
    budget stopped some of its code. A ``json`` column on PostgreSQL reads as a dict, JSON
    text on SQLite as a string."""
    if not document:
        return False
    result = json.loads(document) if isinstance(document, str) else document
    said = [test["output"] for test in result["tests"]] + result.get("messages", [])
    return any(words in line for line in said for words in BUDGET_WORDS)


def _seconds(moment: str | datetime) -> float:
    """A stored moment as epoch seconds: a ``timestamptz`` reads as a datetime on
    PostgreSQL, ISO 8601 text on SQLite."""
    return (moment if isinstance(moment, datetime) else datetime.fromisoformat(moment)).timestamp()


def idle_vs_loaded(kinds: list[str], scores: dict[tuple[str, int], float | None],
                   stopped: dict[tuple[str, int], bool]) -> dict[str, object]:
    """Each fixture kind's scores in the idle rush and beside the hogs, the uploads whose two
    scores differ (index, kind, idle, loaded) and how many feedbacks name a budget that ran
    out. A wrong notebook may score differently on the fresh data each upload draws (the
    week's ``seed`` fixture), load or not: a budget named only beside the hogs is the load."""
    by_kind: dict[str, dict[str, Counter[str]]] = {}
    for index, kind in enumerate(kinds):
        for label in ("idle", "loaded"):
            by_kind.setdefault(kind, {"idle": Counter(), "loaded": Counter()})[label][
                str(scores.get((label, index)))] += 1
    differ = [(index, kind, scores.get(("idle", index)), scores.get(("loaded", index)))
              for index, kind in enumerate(kinds) if scores.get(("idle", index)) != scores.get(("loaded", index))]
    return {"uploads_scored_differently": len(differ), "differing_uploads": differ[:20],
            "stopped_by_a_budget": {label: sum(was for (of, _), was in stopped.items() if of == label)
                                    for label in ("idle", "loaded")},
            "scores_by_kind": {kind: {label: dict(counts) for label, counts in each.items()}
                               for kind, each in by_kind.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--uploads", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--week", default="week01", help="the week students upload to (its fixtures are the uploads)")
    parser.add_argument("--clients", type=int, default=32, help="uploads in flight at once at most")
    parser.add_argument("--kill", action="store_true", help="SIGKILL the server halfway and start it again")
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite",
                        help="the service's SQLite files, or a throwaway PostgreSQL server")
    parser.add_argument("--replicas", type=int, default=1, help="serve processes behind a round-robin proxy "
                        "(more than one needs --database postgresql)")
    parser.add_argument("--hogs", action="store_true", help="run the rush again beside CPU hogs and compare "
                        "each upload's idle and loaded scores")
    parser.add_argument("--out", type=Path, default=None, help="write the summary JSON here too")
    args = parser.parse_args()
    if args.replicas > 1 and args.database != "postgresql":
        parser.error("--replicas above 1 needs --database postgresql (SQLite is one replica)")

    folder = Path(tempfile.mkdtemp(prefix="service-rush-"))
    certificate = make_certificate(folder)
    os.environ["REQUESTS_CA_BUNDLE"] = str(certificate[0])  # the LMS fetches the tool's JWKS over https
    paths = build(folder / "notebooks", args.uploads, args.week)
    notebooks = [p.read_bytes() for p in paths]
    passes = [("idle", notebooks)] + ([("loaded", [made_unlike(n, "loaded") for n in notebooks])] if args.hogs else [])
    pass_of = {hashlib.sha256(content).hexdigest(): (label, index)  # what the store keys an upload by
               for label, contents in passes for index, content in enumerate(contents)}
    state = PlatformState()
    platform_port, ports = free_port(), [free_port() for _ in range(args.replicas)]
    state.base = f"http://127.0.0.1:{platform_port}"
    postgres = PostgresServer(Path(tempfile.mkdtemp(prefix="service-rush-pg-"))) if args.database == "postgresql" \
        else None
    if postgres:
        atexit.register(postgres.stop)  # also when the run fails
    database = postgres.new_database() if postgres else f"sqlite:///{folder / 'service' / 'gradebook.sqlite'}"
    proxy = RoundRobinProxy(ports) if args.replicas > 1 else None
    tool = f"https://127.0.0.1:{proxy.port if proxy else ports[0]}"
    servers = [Server(folder, port, certificate, args.jobs, public_url=tool, database=database if postgres else None,
                      log=folder / f"serve-{index}.log") for index, port in enumerate(ports)]
    server = servers[0]  # the one --kill kills
    with serving(create_platform(state), platform_port) as lms:
        with ThreadPoolExecutor(len(servers)) as starting:
            list(starting.map(Server.start, servers))
        admin = Browser(certificate[0])
        admin.get(registration_url(server), params={
            "openid_configuration": f"{lms}/.well-known/openid-configuration",
            "registration_token": state.new_registration_token()})
        picker = admin.get(f"{lms}/start", params={"user": "teacher", "role": "instructor", "deep_link": "true"})
        link = admin.submit(picker, "pick", data={"week": args.week}).json()["created"][0]["resource_link_id"]

        students: list[tuple[Browser, str]] = []   # each student's browser and the upload form's CSRF token

        def launch(index: int) -> None:
            browser = Browser(certificate[0])
            page = browser.get(f"{lms}/start", params={"user": f"s{index:04d}", "link": link})
            form = next(f for f in forms(page.text) if f["id"] == "upload")
            students.append((browser, form["fields"]["csrf"]))

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(launch, range(args.students)))
        print(f"{len(students)} students launched; {args.uploads} uploads over {args.seconds:.0f} s", flush=True)

        accepted: list[tuple[str, float]] = []   # (attempt URL, wall time of the upload)
        retried = Counter[str]()
        lock = threading.Lock()
        killed = threading.Event()
        orphans: list[int] = []

        def upload(index: int, notebook: bytes, start: float) -> None:
            browser, csrf = students[index % len(students)]
            at = start + index * args.seconds / args.uploads
            time.sleep(max(0.0, at - time.time()))
            if args.kill and index == args.uploads // 2 and not killed.is_set():
                killed.set()
                orphans.append(server.kill())
                threading.Thread(target=server.start, daemon=True).start()
            while True:
                sent = time.time()
                try:
                    reply = browser.client.post(f"{tool}/week/{args.week}/upload", data={"csrf": csrf}, files={
                        "notebook": (f"{args.week}-{index}.ipynb", notebook, "application/x-ipynb+json")})
                except httpx.TransportError:
                    retried["server down"] += 1
                    time.sleep(0.5)
                    continue
                if reply.status_code == 200 and "/attempt/" in str(reply.url):
                    with lock:
                        accepted.append((str(reply.url), sent))
                    return
                retried[f"HTTP {reply.status_code}"] += 1
                if reply.status_code == 409:  # refused by the policy, e.g. the same file again after a lost reply
                    return
                time.sleep(0.5)

        sampler_stop = threading.Event()

        def sample() -> None:
            while not sampler_stop.is_set():
                for each in servers:
                    each.sample_memory()
                time.sleep(0.5)

        threading.Thread(target=sample, daemon=True).start()
        engine = create_engine(database)
        for label, contents in passes:  # the idle rush; with --hogs, then the loaded one
            with cpu_hogs() if label == "loaded" else nullcontext():
                start = time.time()
                with ThreadPoolExecutor(args.clients) as pool:
                    list(pool.map(upload, range(args.uploads), contents, [start] * args.uploads))
                uploaded_by = time.time()
                print(f"{label} rush: uploads done after {uploaded_by - start:.0f} s; waiting for grading and scores",
                      flush=True)
                while True:
                    with engine.connect() as db:
                        waiting = db.execute(text("SELECT COUNT(*) FROM attempts WHERE state IN ('queued', 'grading')")
                                             ).scalar_one()
                        unsent = db.execute(text("SELECT COUNT(*) FROM posts WHERE state = 'pending'")).scalar_one()
                    if not waiting and not unsent:
                        break
                    if time.time() - uploaded_by > 1800:
                        print("gave up waiting after 30 min", flush=True)
                        break
                    time.sleep(1)
                finished = time.time()
        sampler_stop.set()
        for each in servers:
            each.stop()

    with engine.connect() as db:
        rows = db.execute(text('SELECT "user", content_hash, submitted_at, graded_at, state FROM attempts')).all()
        graded = [(pass_of[content_hash], score, document) for content_hash, score, document in db.execute(text(
            "SELECT a.content_hash, r.score, r.document FROM attempts a "
            "LEFT JOIN results r ON r.week = a.week AND r.key = 'attempt-' || a.id")).all() if content_hash in pass_of]
        posts = db.execute(text('SELECT "user", payload, state FROM posts')).all()
    engine.dispose()
    if proxy:
        proxy.close()
    to_feedback = [_seconds(g) - _seconds(s)
                   for _, _, s, g, state_ in rows if g and state_ == "graded"]
    submitted = {user: sorted(_seconds(s) for u, _, s, _, _ in rows if u == user)
                 for user in {r[0] for r in rows}}
    to_score = []
    for score in state.scores:
        times = [t for t in submitted.get(score["userId"], []) if t <= score["received"]]
        if times:
            to_score.append(score["received"] - times[-1])
    stamps = Counter((s["userId"], s["timestamp"]) for s in state.scores)
    summary = {
        "week": args.week, "students": args.students, "uploads": args.uploads, "seconds": args.seconds,
        "jobs": args.jobs, "database": args.database, "replicas": args.replicas,
        "killed_and_restarted": args.kill, "accepted": len(accepted), "attempts_in_store": len(rows),
        "graded": sum(r[4] == "graded" for r in rows), "failed": sum(r[4] == "failed" for r in rows),
        "lost": len(accepted) - sum(r[4] in ("graded", "failed") for r in rows),
        "duplicated_uploads": sum(n - 1 for n in Counter(r[1] for r in rows).values() if n > 1),
        "duplicated_scores": sum(n - 1 for n in stamps.values() if n > 1),
        "scores_received": len(state.scores), "scores_refused_by_lms": len(state.refused_scores),
        # A post is made when the counted score changes: with the default "best" policy an
        # attempt that does not beat the student's best posts nothing, so scores_received
        # matches posts_posted, not the number of attempts graded.
        "posts_posted": sum(p[2] == "posted" for p in posts),
        "posts_superseded": sum(p[2] == "superseded" for p in posts),
        "posts_not_sent": sum(p[2] not in ("posted", "superseded") for p in posts),
        "upload_to_feedback_s": percentiles(to_feedback), "upload_to_score_s": percentiles(to_score),
        "drain_after_last_upload_s": round(finished - uploaded_by, 1),
        "server_peak_rss_mib": round(sum(each.peak_rss for each in servers) / 2**20), "client_retries": dict(retried),
        "graders_alive_5s_after_the_kill": orphans[0] if orphans else None,
        "load_average_1min_at_end": os.getloadavg()[0],
    }
    if args.hogs:
        summary["upload_to_feedback_s_by_rush"] = {label: percentiles([
            _seconds(g) - _seconds(s)
            for _, content_hash, s, g, state_ in rows
            if g and state_ == "graded" and pass_of.get(content_hash, ("",))[0] == label]) for label, _ in passes}
        summary["idle_vs_loaded"] = idle_vs_loaded([kind_of(path) for path in paths],
                                                   {upload: score for upload, score, _ in graded},
                                                   {upload: stopped_by_a_budget(document)
                                                    for upload, _, document in graded})
    report = json.dumps(summary, indent=2)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
