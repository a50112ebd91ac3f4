"""What a monitoring system scrapes: ``GET /metrics``, the service's gauges in Prometheus'
text format (``service/metrics.py``), for whoever holds the metrics token.

The token is ``keys/metrics.token`` in the service's data folder (made at the first start,
readable by its owner only), sent as ``Authorization: Bearer <token>`` (Prometheus:
``authorization: {credentials_file: ...}``). The queue's length and its students' weeks are
not the public's business, and the proxy forwards every path, so loopback alone proves nothing.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import Response

from autograder.exceptions import Refused
from autograder.service.deps import AddressLimited, StoreDep, ToolDep
from autograder.service.metrics import CONTENT_TYPE, exposition

router = APIRouter()


@router.get("/metrics", dependencies=[AddressLimited])
def metrics(request: Request, store: StoreDep, tool: ToolDep) -> Response:
    sent = request.headers.get("authorization", "").encode()
    if not hmac.compare_digest(sent, f"Bearer {tool.metrics_token}".encode()):
        raise Refused(401, "The metrics are for the service's monitoring: send the token in the data folder's "
                           "keys/metrics.token as Authorization: Bearer <token>.")
    return Response(exposition(store.database), media_type=CONTENT_TYPE)
