"""The worker side of the trust boundary: code that runs next to the student's code.

Only ``codec`` and ``framing`` are shared with the grader; they parse whatever crosses
the boundary defensively. Nothing here imports the hidden tests or reads ``source/``.
"""
