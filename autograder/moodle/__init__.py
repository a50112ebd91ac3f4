"""Moodle's files: reading its submissions export, and its naming rules.

Each reader is its own module, read from Moodle's source (each module names the Moodle source
files it follows; docs/LMS.md, "What the tool relies on in Moodle"); they share
only ``names`` (how Moodle names a participant's folder) and ``entries`` (safe reading).
The files Moodle imports (the grading worksheet, the feedback zip) are written by
``autograder.formats``, which takes its naming rules from ``names``. Nothing here grades
or talks to a Moodle site: the web-services sync is ``autograder.moodle_ws``.
"""
