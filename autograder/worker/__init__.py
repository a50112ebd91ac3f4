"""The worker side of the trust boundary: code that runs next to the student's code.

Everything here is imported inside the sandbox, so it stays small and parses whatever
crosses the boundary defensively. Nothing here imports the hidden tests or reads
``source/``. The grader imports four of these modules too: ``codec`` and ``framing`` (the
wire format, both ends: ``execution/zygote.py`` speaks it, ``testing/student.py`` encodes
arguments and decodes values with ``codec``), ``core`` (the request handler, run
in-process by ``execution/local.py`` for trusted notebooks, so both ways answer alike),
and ``seccomp`` (``execution/sandbox.py`` asks whether the filter can load on this
machine). ``zygote`` is only ever started, inside the sandbox, by the command
``execution/sandbox.py`` builds.
"""
