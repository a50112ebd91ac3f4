"""The zygote's heap, laid out so that forking a worker and ending it cost little.

A worker is a fork of the zygote: every page it writes that the zygote holds is copied
for it first (a copy-on-write fault, several microseconds on a virtual machine), and
every page table it inherits is copied at the fork and freed at its exit. Two steps,
taken once the zygote has imported and warmed up everything and before its first fork:

* ``fill_free_chunks``: C's ``malloc`` keeps the zygote's freed memory as ~1,500 free
  chunks spread over its 45 MB heap, linked into lists through their headers. A worker's
  first allocations (numpy's buffers, anything over Python's small-object size) were
  served from those chunks, and taking a chunk off its list writes to its neighbours on
  the list, anywhere in the heap: about 800 page copies per week-4 submission. Once every
  free chunk is taken here (and never given back: ~1 MB, never written, shared by every
  worker), a worker's allocations come from the top of the heap, on fresh pages.
* ``into_huge_pages``: the heap in 2 MiB pages, one page-table entry for 512.

Both are glibc and Linux facilities; where one is missing the step does nothing, and the
zygote works the same, only its workers cost a little more.
"""

from __future__ import annotations

import ctypes

MADV_COLLAPSE = 25
HUGE_PAGE = 1 << 21
# request sizes that take every free chunk, largest first: halving sizes from 64 KiB, below
# glibc's default threshold for mapping a request of its own (128 KiB), so that no request
# here is mapped and the thresholds stay as they were (a larger free chunk is taken 64 KiB
# at a time); then each of the small size classes, 16 bytes apart (``malloc``'s per-size
# caches and fast bins hold chunks of exactly one class)
LARGE_REQUESTS = [1 << shift for shift in range(16, 10, -1)]
SMALL_REQUESTS = range(16, 1025, 16)


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33 and later)."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def fill_free_chunks() -> int:
    """Take every chunk in ``malloc``'s free lists and keep it for good; the number taken.

    A request is served from a free chunk when the top of the heap (``keepcost``) stays
    as it was and no chunk of its own is mapped (``hblks``); the first request of a size
    that is not is given back (it merges into the top again, or waits in its size's cache
    next to the top) and the next, smaller size is tried. Largest first, so a large chunk
    split by a request leaves its rest to the smaller ones."""
    try:
        libc = ctypes.CDLL(None)
        info = libc.mallinfo2
    except (OSError, AttributeError):
        return 0  # not glibc, or older than 2.33
    info.restype = _MallInfo2
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.malloc_trim(0)  # whole free pages back to the kernel first: a worker faults those in fresh
    taken = 0
    for size in (*LARGE_REQUESTS, *reversed(SMALL_REQUESTS)):
        while True:
            before = info()
            chunk = libc.malloc(size)
            after = info()
            if chunk is None:
                return taken
            if after.keepcost != before.keepcost or after.hblks != before.hblks:
                libc.free(chunk)
                break
            taken += 1  # deliberately never freed
    return taken


def into_huge_pages() -> None:
    """Put the zygote's heap into 2 MiB pages where it can (``MADV_COLLAPSE``, Linux 6.1 and
    later; elsewhere a refused hint, which changes nothing). A fork copies one page-table
    entry per huge page instead of 512, and a worker's exit frees as few: a worker costs
    less to make and to end. A worker that writes into a huge page gets a copy of the 4 KiB
    it wrote to, as before."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()  # address range, permissions, offset, device, inode[, path]
            if not fields[1].startswith("rw") or (len(fields) > 5 and fields[5] != "[heap]"):
                continue  # anonymous writable memory only: the heap and malloc's and Python's arenas
            start, end = (int(address, 16) for address in fields[0].split("-"))
            start = -(-start // HUGE_PAGE) * HUGE_PAGE
            end = end // HUGE_PAGE * HUGE_PAGE
            if end > start:
                libc.madvise(start, end - start, MADV_COLLAPSE)
