"""A package whose import kills the worker's parent: in its zygote, before
any record names it."""
import os
import signal

os.kill(os.getppid(), signal.SIGKILL)
