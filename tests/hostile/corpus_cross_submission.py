"""Hostile cases against the *next* submission: leave something behind, or find it.

Planters (base ``correct``) try to sabotage, rob or starve whoever the zygote forks next:
the honest submissions graded after them in the same batch must score exactly as they do
alone. Harvesters (base ``leak``) look everywhere a planter could have left a note and put
what they find in ``loot``, which reaches their feedback: the batch test fails if the
planters' ``__MARKER__`` ever shows up there (harvesters raise their loot from the cell:
a cell's own error is the one message a student sees verbatim). Loaded by ``corpus.py``.
"""

SYSV = '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmdt.argtypes = [ctypes.c_void_p]
IPC_CREAT = 0o1000
KEYS = range(0x7A11, 0x7A11 + 6)
'''

CASES = [
    dict(name="plant_modules_on_sys_path", base="correct",
         attack="plant matplotlib_inline, pandas, tqdm, statistics and sitecustomize on every sys.path entry",
         cells=['''
import os, sys
EVIL = "import numpy\\nnumpy.allclose = lambda *a, **k: False\\nraise ImportError('__MARKER__ planted')\\n"
for folder in ["", ".", "/", "/opt", "/opt/autograder", "/tmp", os.path.expanduser("~")] + sys.path:
    for name in ("matplotlib_inline/__init__.py", "pandas.py", "tqdm.py", "statistics.py",
                 "sitecustomize.py", "usercustomize.py", "sklearn_extra.py"):
        path = os.path.join(folder or ".", name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(EVIL)
        except OSError:
            pass
''']),
    dict(name="write_root_etc_dev", base="correct",
         attack="write notes and config into /, /etc, /dev and /opt, bubblewrap's own tmpfs",
         cells=['''
import os
for path in ("/__MARKER__", "/etc/__MARKER__", "/dev/__MARKER__", "/opt/__MARKER__", "/etc/matplotlibrc",
             "/etc/ld.so.preload", "/etc/pip.conf", "/etc/ipython/ipython_config.py"):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("__MARKER__\\n")
    except OSError:
        pass
''']),
    dict(name="deep_chain_beyond_path_max", base="correct",
         attack="a folder chain deeper than PATH_MAX in /tmp and /dev/shm, every level chmod 0, a note at the bottom",
         cells=['''
import os
for top in ("/tmp", "/dev/shm"):
    os.chdir(top)
    for depth in range(2500):
        try:
            os.mkdir("d" * 200)
            os.chdir("d" * 200)
        except OSError:
            break
    with open("note", "w") as f:
        f.write("__MARKER__")
    for depth in range(2500):
        try:
            os.chmod(".", 0)
            os.chdir("..")
        except OSError:
            break
os.chdir("/tmp")
''']),
    dict(name="sysv_shared_memory_hoard", base="correct",
         attack="leave 6 SysV segments of 64 MB, touched and detached, charged to the zygote's cgroup",
         cells=[SYSV + '''
for key in KEYS:
    segment = libc.shmget(key, 64 << 20, IPC_CREAT | 0o666)
    address = libc.shmat(segment, None, 0)
    if address not in (None, ctypes.c_void_p(-1).value):
        ctypes.memset(address, 0x41, 64 << 20)
        note = b"__MARKER__"
        ctypes.memmove(address, note, len(note))
        libc.shmdt(address)
''']),
    dict(name="sysv_semaphores_and_queues", base="correct",
         attack="leave SysV semaphore sets and message queues holding a note",
         cells=[SYSV + '''
class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("text", ctypes.c_char * 64)]
for key in KEYS:
    libc.semget(key, 4, IPC_CREAT | 0o666)
    queue = libc.msgget(key, IPC_CREAT | 0o666)
    message = Message(1, b"__MARKER__")
    libc.msgsnd(queue, ctypes.byref(message), 64, 0o4000)
''']),
    dict(name="posix_message_queue", base="correct",
         attack="leave a POSIX message queue (no /dev/mqueue mounted: the kernel keeps it per IPC namespace)",
         cells=['''
import ctypes, os
rt = ctypes.CDLL("librt.so.1", use_errno=True)
queue = rt.mq_open(b"/__MARKER__", os.O_CREAT | os.O_RDWR, 0o666, None)
if queue != -1:
    rt.mq_send(queue, b"__MARKER__", 10, 0)
''']),
    dict(name="tmpfs_hoard_in_a_daemon", base="correct",
         attack="fill /tmp and /dev/shm, then keep the files open in a detached daemon so nothing can free them",
         cells=['''
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        held = []
        for folder in ("/tmp", "/dev/shm"):
            for i in range(64):
                try:
                    f = open(os.path.join(folder, f"hoard{i}"), "wb")
                    f.write(b"h" * (4 << 20))
                    held.append(f)
                    os.unlink(f.name)
                except OSError:
                    break
        time.sleep(300)
    os._exit(0)
time.sleep(0.2)
''']),
    dict(name="undying_worker", base="correct",
         attack="rebind os._exit and sys.exit, ignore SIGTERM and SIGHUP, block in atexit: outlive the submission",
         cells=['''
import atexit, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
os._exit = lambda *args: time.sleep(600)
sys.exit = os._exit
atexit.register(time.sleep, 600)
''']),
    dict(name="rendezvous_sockets", base="correct",
         attack="a FIFO and a Unix socket in /tmp and an abstract socket, served by a daemon for the next submission",
         cells=['''
import os, socket, time
os.mkfifo("/tmp/__MARKER__.fifo")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        servers = []
        for address in ("/tmp/__MARKER__.sock", "\\0__MARKER__"):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.bind(address)
                s.listen(4)
                servers.append(s)
            except OSError:
                pass
        deadline = time.time() + 300
        while time.time() < deadline:
            for s in servers:
                s.settimeout(0.1)
                try:
                    conn, _ = s.accept()
                    conn.sendall(b"__MARKER__")
                except OSError:
                    pass
    os._exit(0)
time.sleep(0.2)
''']),
    dict(name="regain_capabilities", base="correct",
         attack="capset CAP_SYS_ADMIN back, unshare a mount namespace, setns into the zygote's, mount over /tmp",
         cells=['''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
data = (Data * 2)()
data[0].effective = data[0].permitted = 1 << 21
libc.capset(ctypes.byref(Header(0x20080522, 0)), data)
libc.unshare(0x00020000 | 0x08000000)
for ns in ("mnt", "ipc"):
    try:
        fd = os.open(f"/proc/1/ns/{ns}", os.O_RDONLY)
        libc.setns(fd, 0)
    except OSError:
        pass
libc.mount(b"tmpfs", b"/opt", b"tmpfs", 0, None)
for path in ("/opt/__MARKER__", "/proc/1/root/tmp/__MARKER__", "/proc/1/cwd/__MARKER__"):
    try:
        open(path, "w").write("__MARKER__")
    except OSError:
        pass
''']),
    dict(name="lock_the_scratch", base="correct",
         attack="chmod /tmp, /dev/shm and the working folder to 0 and make them immutable-looking",
         cells=['''
import os
for path in (".", "/tmp/scratch", "/tmp", "/dev/shm"):
    try:
        os.chmod(path, 0)
    except OSError:
        pass
''']),
    dict(name="poison_the_data_folder", base="correct",
         attack="replace ./data and HOME's dot-files (.mpl, .ipython, .config) with notes for the next submission",
         cells=['''
import os
home = os.path.expanduser("~")
for path in ("data", os.path.join(home, ".mpl", "matplotlibrc"), os.path.join(home, ".ipython", "profile_default",
             "startup", "00-evil.py"), os.path.join(home, ".config", "matplotlib", "matplotlibrc")):
    try:
        if os.path.islink(path):
            os.unlink(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            f.write("print('__MARKER__')\\n")
    except OSError:
        pass
''']),
    # -- harvesters: find whatever the planters above left ---------------------------------------
    dict(name="harvest_ipc", base="leak",
         attack="read SysV segments, semaphores, queues and POSIX queues a planter left",
         cells=[SYSV + '''
import os
loot = []
for key in KEYS:
    segment = libc.shmget(key, 0, 0)
    if segment != -1:
        address = libc.shmat(segment, None, 0o10000)
        if address not in (None, ctypes.c_void_p(-1).value):
            loot.append(ctypes.string_at(address, 40).decode(errors="replace"))
class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("text", ctypes.c_char * 64)]
for key in KEYS:
    queue = libc.msgget(key, 0)
    if queue != -1:
        message = Message()
        if libc.msgrcv(queue, ctypes.byref(message), 64, 0, 0o4000) > 0:
            loot.append(message.text.decode(errors="replace"))
rt = ctypes.CDLL("librt.so.1", use_errno=True)
if rt.mq_open(b"/__MARKER__", os.O_RDONLY | os.O_NONBLOCK, 0, None) != -1:
    loot.append("posix queue __MARKER__")
for kind in ("shm", "sem", "msg"):  # after the contents: the message shows the first 190 characters
    loot += [kind + ":" + row.split()[0] for row in open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]]
if loot:
    raise RuntimeError("LOOT " + repr(loot)[:190])
''']),
    dict(name="harvest_everywhere", base="leak",
         attack="walk every folder this process can write or list, outside /proc and /sys, for any planted note",
         cells=['''
import os, sys
loot = []
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys", "/usr", sys.prefix)]
    for name in files + dirs:
        if "hostile-" in name or name in ("note", "pandas.py", "tqdm.py", "sitecustomize.py", "matplotlibrc"):
            path = os.path.join(top, name)
            try:
                loot.append(path + "=" + (open(path, errors="replace").read(60) if os.path.isfile(path) else "dir"))
            except OSError as exc:
                loot.append(path + ":" + type(exc).__name__)
if loot:
    raise RuntimeError("LOOT " + repr(loot)[:190])
''']),
    dict(name="harvest_sockets_and_processes", base="leak",
         attack="connect to every Unix and abstract socket listed in /proc/net/unix, list surviving processes",
         cells=['''
import os, socket
loot = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
for row in open("/proc/net/unix").read().splitlines()[1:]:
    fields = row.split()
    if len(fields) >= 8:
        path = fields[7]
        address = "\\0" + path[1:] if path.startswith("@") else path
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(0.5)
        try:
            s.connect(address)
            loot.append(path + "=" + s.recv(60).decode(errors="replace"))
        except OSError:
            pass
for path in ("/tmp/__MARKER__.fifo",):
    if os.path.exists(path):
        loot.append(path)
if loot:
    raise RuntimeError("LOOT " + repr(loot)[:190])
''']),
    dict(name="import_what_was_planted", base="leak",
         attack="import the modules a planter may have left, and report where each came from",
         cells=['''
import importlib, sys
loot = []
for name in ("pandas", "tqdm", "statistics", "sitecustomize", "usercustomize", "sklearn_extra", "matplotlib_inline"):
    sys.modules.pop(name, None)
    try:
        module = importlib.import_module(name)
        where = getattr(module, "__file__", "") or ""
        if not where.startswith(("/usr/", sys.prefix)):
            loot.append(name + "@" + where)
    except BaseException as exc:  # a planted module raising is a finding too
        loot.append(name + ":" + type(exc).__name__ + ":" + str(exc)[:60])
if loot:
    raise RuntimeError("LOOT " + repr(loot)[:190])
''']),
]
