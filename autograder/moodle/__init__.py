"""Moodle's file formats: the submissions export, the grading worksheet, the feedback zip.

Each format is its own module, read from Moodle's source (see shared/MOODLE.md); they share
only ``names`` (how Moodle names a participant's folder) and ``entries`` (safe reading).
"""
