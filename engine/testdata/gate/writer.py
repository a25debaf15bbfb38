import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def writes_file():
    with open(os.path.join(HERE, "written.txt"), "w") as fh:
        fh.write("the probe wrote this")
    return 1


def _helper():
    os.remove(os.path.join(HERE, "written.txt"))


def deletes_through_helper():
    _helper()
    return 1


def reads_clock():
    return time.time()


def reads_file():
    with open(os.path.abspath(__file__)) as fh:
        return len(fh.read())
