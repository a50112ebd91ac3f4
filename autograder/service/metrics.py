"""What to watch on a running service, in Prometheus' text format: the queue (its length
per week, the age of its oldest attempt), the attempts in each state, the score posts
waiting and failed.

Every value is read from the database at each scrape, in one read transaction, so every
replica sharing a database reports the same numbers and a scrape of any one of them is
the whole service's. Nothing is counted in a process's memory: a restart loses nothing
and two replicas are not summed twice.

The one exception is the sandbox's layers (``autograder_sandbox_layer``): they belong to
the machine that answers the scrape (found as ``serve`` found them at start, without
starting a zygote), so each replica reports its own; graders on a Dask cluster
(``--scheduler``) run on the cluster's machines, whose layers their own logs say.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from sqlalchemy import func, select

from autograder.database import Database, clock
from autograder.database.tables import attempts, posts
from autograder.execution.sandbox import layer_states

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # text/plain; version=0.0.4, what every Prometheus scrapes
ATTEMPT_STATES = ("queued", "grading", "graded", "failed")
POST_STATES = ("pending", "posted", "failed", "superseded")


class ServiceMetrics(Collector):
    """The service's gauges, collected from ``database`` whenever they are asked for."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def collect(self) -> Iterator[Metric]:
        with self.database.read() as db:
            queued = db.execute(select(attempts.c.week, func.count()).where(attempts.c.state == "queued")
                                .group_by(attempts.c.week).order_by(attempts.c.week)).all()
            oldest = db.execute(select(func.min(attempts.c.submitted_at))
                                .where(attempts.c.state == "queued")).scalar()
            by_state: dict[str, int] = {state: count for state, count in db.execute(
                select(attempts.c.state, func.count()).group_by(attempts.c.state))}
            post_states: dict[str, int] = {state: count for state, count in db.execute(
                select(posts.c.state, func.count()).group_by(posts.c.state))}
        queue = GaugeMetricFamily("autograder_queued_attempts", "Attempts waiting for a grader, per week.",
                                  labels=["week"])
        for week, count in queued:
            queue.add_metric([week], count)
        yield queue
        yield GaugeMetricFamily("autograder_oldest_queued_attempt_age_seconds",
                                "Seconds the oldest waiting attempt has waited (0: none waits).",
                                value=0.0 if oldest is None else max(0.0, (clock.now() - oldest).total_seconds()))
        states = GaugeMetricFamily("autograder_attempts", "Attempts in each state (a regrade moves a graded "
                                   "attempt back to queued).", labels=["state"])
        for state in ATTEMPT_STATES:
            states.add_metric([state], by_state.get(state, 0))
        yield states
        sent = GaugeMetricFamily("autograder_score_posts", "AGS score posts in each state: pending (waiting to be "
                                 "sent or retried), posted, failed (given up: an instructor retries them), "
                                 "superseded.", labels=["state"])
        for state in POST_STATES:
            sent.add_metric([state], post_states.get(state, 0))
        yield sent


class SandboxLayers(Collector):
    """This machine's sandbox layers: 1 for each one on, 0 for each one off, so an alert
    can watch for a missing one (a cgroup v2 host without ``Delegate=yes``)."""

    def collect(self) -> Iterator[Metric]:
        states = layer_states()
        on = GaugeMetricFamily("autograder_sandbox_layer", "Sandbox layers on this replica's machine: 1 on, 0 off "
                               "(docs/SECURITY.md).", labels=["layer"])
        for state in states:
            on.add_metric([state.name.replace(" ", "_")], 1 if state.on else 0)
        yield on
        memory = next(state for state in states if state.name == "memory cgroup")
        yield GaugeMetricFamily("autograder_sandbox_memory_cgroup_version", "The cgroup version of the sandbox's "
                                "memory layer: 1, 2, or 0 when it is off.",
                                value=int(memory.how.removeprefix("v")) if memory.on else 0)


def exposition(database: Database) -> bytes:
    """The metrics page's body: the database's gauges now and this machine's sandbox
    layers, in Prometheus' text format 0.0.4."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServiceMetrics(database))
    registry.register(SandboxLayers())
    return generate_latest(registry)
