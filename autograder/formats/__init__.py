"""Every file the grader writes for people and for other systems, one format per module.

``result_json`` (the result document), ``worksheet`` (Moodle's grading worksheet, filled
or new) and ``feedback_zip`` (Moodle's feedback-files zip) are written here; all of them
appear whole or not at all (``atomic``) and write points one way (``points``). Reading
what Moodle hands us (the submissions export, its naming rules) stays in ``moodle/``.
"""
