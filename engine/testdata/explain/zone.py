import os
import time


def zone():
    """Answers with the time zone, a little slowly: naming its cause
    costs what its calls cost, in every run that flips a condition."""
    time.sleep(0.05)
    return os.environ.get("TZ")
