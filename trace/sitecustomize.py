# sbx tracing for Python (docs/observe.md "Tracing"): loaded through PYTHONPATH by every
# interpreter of a traced run, children included. An audit hook (PEP 578) turns file
# opens, process spawns, connects and name lookups into one JSON line each on the run's
# event FIFO, opened once here and written with os.write (never open(), which would
# re-enter the hook). The engine stamps each line with the run and its arrival time.
# It observes; it is no fence: a program can close the descriptor or write lines itself.
import os
import sys


def _sbx_trace_install():
    fifo = os.environ.get("SBX_TRACE")
    if not fifo:
        return
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    import json
    import time

    here = os.path.dirname(os.path.abspath(__file__))
    # reads of the system's libraries and of the engine's own files are noise; writes never are
    quiet = tuple(p.rstrip("/") + "/" for p in {
        "/usr", "/lib", "/lib32", "/lib64", "/etc/ld.so.cache", "/etc/localtime", "/etc/ssl",
        "/proc", "/sys", "/dev", here, sys.prefix, sys.base_prefix, sys.exec_prefix,
    } if p)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    busy = [False]

    def emit(ev):
        if busy[0]:
            return
        busy[0] = True
        try:
            ev["t"] = int(time.time() * 1000)
            ev["pid"] = os.getpid()
            line = json.dumps(ev, separators=(",", ":"), ensure_ascii=True) + "\n"
            if len(line) <= 4096:
                os.write(fd, line.encode())
        except Exception:
            pass  # a full FIFO or a closed descriptor loses the event, never the program
        finally:
            busy[0] = False

    def path_of(p):
        if isinstance(p, int):
            return None
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        return os.path.abspath(str(p))

    def own_program(p):
        d, base = os.path.split(p)
        return os.path.basename(d) == ".sbx" and base.startswith("run_")

    def hook(event, args):
        if busy[0]:
            return
        try:
            if event == "open":
                path, mode, flags = args
                p = path_of(path)
                if p is None:
                    return
                if isinstance(mode, str):
                    write = any(c in mode for c in "wax+")
                else:
                    write = bool((flags or 0) & write_flags)
                if not write and ((p + "/").startswith(quiet) or p.startswith(quiet) or own_program(p)
                                  or "__pycache__" in p):
                    return
                emit({"kind": "write" if write else "read", "path": p})
            elif event == "subprocess.Popen":
                executable, argv = args[0], args[1]
                if isinstance(argv, (str, bytes)):
                    argv = [argv]
                emit({"kind": "spawn", "argv": [os.fsdecode(a) if isinstance(a, bytes) else str(a)
                                                 for a in (argv or [executable])]})
            elif event in ("os.exec", "os.posix_spawn"):
                emit({"kind": "spawn", "argv": [os.fsdecode(a) if isinstance(a, bytes) else str(a)
                                                 for a in args[1]]})
            elif event == "os.system":
                cmd = args[0]
                emit({"kind": "spawn", "argv": ["sh", "-c", os.fsdecode(cmd) if isinstance(cmd, bytes) else str(cmd)]})
            elif event == "socket.connect":
                addr = args[1]
                if isinstance(addr, tuple) and len(addr) >= 2:
                    emit({"kind": "connect", "host": str(addr[0]), "port": int(addr[1])})
                else:
                    emit({"kind": "connect", "path": os.fsdecode(addr) if isinstance(addr, bytes) else str(addr)})
            elif event == "socket.getaddrinfo":
                host, port = args[0], args[1]
                emit({"kind": "lookup", "host": os.fsdecode(host) if isinstance(host, bytes) else str(host),
                      "port": int(port) if isinstance(port, int) else 0})
            elif event in ("socket.gethostbyname", "socket.gethostbyname_ex"):
                emit({"kind": "lookup", "host": str(args[0]), "port": 0})
        except Exception:
            pass

    sys.addaudithook(hook)

    # a sandbox without network refuses the socket itself, before any connect: say what
    # create_connection was asked for before it tries
    import socket
    real = socket.create_connection

    def create_connection(address, *a, **kw):
        try:
            emit({"kind": "connect", "host": str(address[0]), "port": int(address[1])})
        except Exception:
            pass
        return real(address, *a, **kw)

    socket.create_connection = create_connection


_sbx_trace_install()
del _sbx_trace_install
