"""The course in several languages from one source (gettext catalogs managed with Babel).

``_`` is what hidden tests import to make their feedback translatable.
"""

from autograder.i18n.runtime import _, speaking

__all__ = ["_", "speaking"]
