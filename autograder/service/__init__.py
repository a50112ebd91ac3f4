"""``autograder serve``: the grading service an LMS launches over LTI 1.3.

store (one facade over users, attempt_queue, counting, posts, ags and pages: attempts,
the queue, counted scores and outbox rows, in the gradebook's database), policy (the
course's per-week rules), runner (grades the queue on warm graders or a Dask cluster),
outbox (sends scores back by AGS); the web app and LTI live beside them.
"""
