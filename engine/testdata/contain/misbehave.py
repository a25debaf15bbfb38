"""Functions that misbehave in every way a call can: each must be named and
contained, and fine() must still be reported."""
import ctypes
import os
import signal
import sys
import threading
import time


def hangs(x):
    time.sleep(3600)


def spins(x):
    while True:
        pass


def exits():
    os._exit(3)


def kills_itself():
    os.kill(os.getpid(), signal.SIGKILL)


def segfaults():
    ctypes.string_at(0)


def leaks_thread():
    threading.Thread(target=time.sleep, args=(3600,)).start()
    return 1


def prints(x):
    print("V:forged", x)
    sys.stderr.write("noise\n")
    return 1


def fine(x):
    return x
