"""The keyboard in a real browser, on the tool's pages inside the stand-in LMS's iframe.

The tool's frame is cross-site to the LMS's page (https beside http), so Chromium runs it in
a renderer of its own and routes every key to it. Playwright's ``Keyboard.press`` has no
timeout, and twice on a loaded machine the first Tab after a key that navigated the frame
never came back (the browser alive, both sides idle), most likely sent while the frame's next
document was being set up. So a key that navigates waits for the navigation and then for the
new document's load event before the next key goes (``navigate``): no hang since, in two full
runs in three processes and three runs of the keyboard tests beside CPU hogs. Should one come
back, `make test`'s per-test ceiling fails it with every thread's stack.
"""

from __future__ import annotations

from typing import Any

from tests.helpers import focus_outline
from tests.service.lms import Lms


def press_until(page: Any, frame: Any, selector: str, key: str = "Tab", limit: int = 40) -> None:
    """Press ``key`` until the element ``selector`` of ``frame`` has the focus, and see it drawn."""
    for _ in range(limit):
        page.keyboard.press(key)
        if frame.evaluate(f"document.hasFocus() && document.activeElement.matches({selector!r})"):
            assert focus_outline(frame), f"{selector} has the focus but no visible outline"
            return
    raise AssertionError(f"{key} never reached {selector}")


def tab_to(page: Any, selector: str, frame: Any, limit: int = 80) -> None:
    """Press Tab until the element ``selector`` of ``frame`` has the focus (none if it has it)."""
    target = frame.locator(selector)
    for _ in range(limit):
        if target.evaluate("element => element === document.activeElement"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{selector} cannot be reached with Tab")


def navigate(lms: Lms, page: Any, key: str = "Enter") -> Any:
    """Press ``key`` (Enter on a link or a button, or a key of the page's) and wait for the
    navigation it starts and the new document's load: the tool's frame as it is after it."""
    with page.expect_event("framenavigated"):
        page.keyboard.press(key)
    frame = lms.tool_frame(page)
    frame.wait_for_load_state("load")
    return frame
