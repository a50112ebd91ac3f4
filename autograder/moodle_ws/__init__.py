"""Moodle's web services: grading an Assignment where it is (``autograder moodle sync``).

``webservice`` is the REST client and ``replies`` the shapes of what Moodle answers (both
read from Moodle's source: docs/LMS.md names the files); ``sync`` pulls hand-ins, grades
them through ``autograder.batch`` and pushes grades back, remembering what it pushed in
``sync_state``; ``sync_report`` shows a run. This package sits above grading (it runs a
batch), unlike ``autograder.moodle``, which only reads Moodle's files.
"""
