"""The worker side of the trust boundary: code that runs next to the student's code.

Everything here is imported inside the sandbox, so it stays small and parses whatever
crosses the boundary defensively. Nothing here imports the hidden tests or reads
``source/``. The grader shares three modules: ``codec`` and ``framing`` (the wire format,
both ends), and ``core`` (the request handler, run in-process by
``execution/local.LocalChannel`` for trusted notebooks); ``execution/sandbox.py`` asks
``seccomp`` whether the filter can load on this machine.
"""
