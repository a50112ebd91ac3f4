"""What a cell displays while a notebook is graded: its text, and no picture nobody looks at.

In Jupyter a displayed value is formatted for every MIME type a browser could show: a figure
becomes a PNG, a DataFrame an HTML table. While grading, nobody reads any of it (what a cell
prints is drained and dropped; feedback comes from the hidden tests), yet it is paid for out
of the student's time budget. Under ``%matplotlib inline``, the first line of many a notebook,
every figure a cell leaves open is rasterised and compressed after the cell: about 75 ms a
figure on the grading machines, half of what grading a whole week-1 notebook costs, and a
notebook heavy with plots could run out of time for pictures alone.

So the grading shell computes ``text/plain`` only (the value's ``repr``, printed as a terminal
IPython prints it). A figure that Jupyter would have turned into an image is still drawn,
without rendering (``Figure.draw_without_rendering``, about half the cost): the layout engine
runs and the ticks and text are placed as in Jupyter, so a test that reads a figure the
notebook kept sees the figure the student saw. Nothing else changes: ``plt.show()`` and the end
of a cell still close the figures, ``savefig`` still writes its file, and ``_repr_html_`` and
the other rich ``_repr_*_`` methods are not called, as in a terminal.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.formatters import DisplayFormatter

SHOWN = ("text/plain",)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "application/pdf")


class TextOnly(DisplayFormatter):
    """A ``DisplayFormatter`` that formats ``text/plain`` only and draws, never renders, a
    matplotlib figure the shell would have made an image of."""

    def format(self, obj: Any, include: Any = None, exclude: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The value's text, after drawing it if it is a figure the shell would picture."""
        if self._pictured_figure(obj):
            obj.draw_without_rendering()
        wanted = [kind for kind in SHOWN if include is None or kind in include]
        if not wanted:
            return {}, {}
        data, metadata = super().format(obj, include=wanted, exclude=exclude)  # type: ignore[no-untyped-call]
        return data, metadata

    def _pictured_figure(self, obj: Any) -> bool:
        """Whether ``obj`` is a matplotlib figure for which an image formatter holds a printer
        (``%matplotlib inline`` registers one for each of its figure formats)."""
        figure_module = sys.modules.get("matplotlib.figure")  # not imported: no figure can exist
        if figure_module is None or not isinstance(obj, figure_module.Figure):
            return False
        for kind in IMAGE_TYPES:
            formatter = self.formatters.get(kind)
            if formatter is None or not formatter.enabled:
                continue
            try:
                formatter.lookup(obj)
            except KeyError:
                continue
            return True
        return False
